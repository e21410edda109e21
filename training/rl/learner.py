"""The learner: one Dr. GRPO step on a batch of rollout groups, then a weight delta for the
workers.

Per step: rewards (the environment's, k1 KL subtracted in the reward when `beta` > 0),
advantages per fixed group without std scaling, the clipped surrogate on every segment of
every rollout (a self-summarized rollout's segments all carry its final reward), token losses
summed over a constant (the generation budget), Adam on all parameters, single epoch.
Segments flagged for text feedback add `lam * KL(student || teacher)` on their own tokens.
With `max_step_kl`, a step that moves the policy further than that on the batch's positions
(KL(after || before) over the whole vocabulary, per position) is undone and retried at
half the rate: Adam's first steps move
every parameter by about `lr` whatever its gradient's size, which at toy scale broke the
reply format within a step or two at lr >= 1e-3 (`benchmarks/RESULTS.md`).

The behaviour log-probs are the sampler's (recorded per token with its version), so the
importance ratio corrects for staleness; with lag 0 and router replay it is 1.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from pydantic import BaseModel, ConfigDict, Field

from training.model import Transformer
from training.rl.policy import (
    Segment,
    padded,
    segment_distributions,
    segment_logprobs,
    token_logprobs,
)
from training.rl_losses import (
    Aggregation,
    KLEstimator,
    aggregate_token_loss,
    clipped_surrogate,
    group_advantages,
    kl_estimate,
)
from training.text_feedback import align_teacher, text_feedback_loss
from training.weight_sync import Delta, Mode, apply_delta, encode_delta


class LearnerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lr: float = Field(default=1e-3, ge=0, description="Adam's rate (0: a flat run, for noise).")
    max_step_kl: float | None = Field(
        default=None,
        gt=0,
        description="Bound on the step's KL(before || after) per token on its own batch: a "
        "step past it is undone and retried at half the rate (up to `step_retries` times).",
    )
    step_retries: int = Field(default=4, ge=1)
    adam_eps: float = Field(
        default=1e-8,
        gt=0,
        description="Adam's epsilon: above a parameter's gradient scale, its steps shrink "
        "(Adam otherwise moves every parameter by about `lr`, noise or not).",
    )
    group_size: int = Field(default=4, ge=2)
    max_tokens: int = Field(default=64, ge=1, description="Generation budget per segment.")
    aggregation: Aggregation = "dr_grpo"
    eps_low: float = 0.2
    eps_high: float = 0.2
    beta: float = Field(default=0.0, ge=0, description="k1 KL in the reward (0: off).")
    kl_estimator: KLEstimator = "k1"
    replay_routes: bool = True
    text_feedback_lambda: float = Field(default=0.0, ge=0)
    text_feedback_anchor: float = Field(
        default=1.0,
        ge=0,
        description="Weight of KL(student || reference) on a flagged segment's other "
        "positions, so that distilling one turn leaves the rest where the reference had it.",
    )
    sync_mode: Mode = "lossless"


@dataclass
class Rollout:
    """One agent attempt: its segments (model calls), its reward, its group (prompt)."""

    task_id: str
    group: int  # rollouts of one group answer the same task, laid out together
    segments: list[Segment]
    reward: float
    details: dict[str, float] = field(default_factory=dict)

    @property
    def versions(self) -> list[int]:
        return [v for s in self.segments for v in s.versions]


@dataclass
class StepMetrics:
    version: int  # after the step
    mean_reward: float
    loss: float
    tokens: int
    max_lag: int
    ratio_mean: float
    ratio_max_dev: float  # max |ratio - 1| over tokens
    feedback_kl: float = 0.0
    sync_bytes: int = 0
    sync_ratio: float = 0.0
    # what says whether a step can learn: the share of groups whose rewards differ (the
    # others have all-zero advantages), the sampled tokens' mean -log p under the behaviour
    # policy (an estimate of the per-token entropy), and KL(policy || reference) per token
    # (k3 on the batch's tokens; 0 without a reference)
    nonzero_groups: float = 0.0
    entropy: float = 0.0
    kl_ref: float = 0.0
    # how far the step moved the policy on the batch (see `Learner._bounded_step`)
    step_kl: float = 0.0
    step_lr: float = 0.0  # the rate the step was taken at (below `lr` after a retry)


def _state(model: Transformer) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


class Learner:
    def __init__(
        self,
        model: Transformer,
        config: LearnerConfig,
        reference: Transformer | None = None,
        version: int = 0,
    ) -> None:
        self.model = model
        self.config = config
        self.reference = reference
        self.version = version
        self.optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, eps=config.adam_eps)
        self.worker_view = _state(model)  # what the workers hold (bf16 deltas round)

    def rewards(
        self,
        rollouts: list[Rollout],
        logp: torch.Tensor,
        reference: torch.Tensor | None,
        mask: torch.Tensor,
    ) -> torch.Tensor:
        """The environment's rewards, less `beta` x each rollout's KL to the reference (k1 by
        default, summed over its tokens) when `beta` > 0; `logp` and `reference` are the
        batch's token log-probs under the policy and the reference, rollout by rollout."""
        base = torch.tensor([r.reward for r in rollouts], dtype=torch.float32)
        if self.config.beta == 0 or reference is None:
            return base
        per_row = (kl_estimate(logp, reference, self.config.kl_estimator) * mask).sum(-1)
        counts = [len(r.segments) for r in rollouts]
        penalties = torch.stack([part.sum() for part in per_row.split(counts)])
        return base - self.config.beta * penalties

    def step(self, rollouts: list[Rollout]) -> StepMetrics:
        """One optimizer step on whole groups (`group_size` rollouts per task, in order)."""
        config = self.config
        rows = [s for r in rollouts for s in r.segments]
        self.model.train()
        distributions, mask = segment_distributions(self.model, rows, config.replay_routes)
        logp = token_logprobs(distributions, rows, mask)
        reference = self._reference_logprobs(rows)
        rewards = self.rewards(rollouts, logp.detach(), reference, mask)
        advantages = group_advantages(rewards, config.group_size)
        spread = advantages.view(-1, config.group_size).abs().amax(dim=1)
        row_advantage = segment_advantages(rollouts, advantages)
        old = padded([s.logprobs for s in rows], logp.shape[1])
        token_loss = clipped_surrogate(logp, old, row_advantage, config.eps_low, config.eps_high)
        loss = aggregate_token_loss(
            token_loss, mask, config.aggregation, config.group_size, float(config.max_tokens)
        )
        feedback = self._feedback(rows)
        if feedback is not None:
            loss = loss + feedback
        self.optimizer.zero_grad()
        loss.backward()
        step_kl, step_lr = self._bounded_step(rows, mask, distributions.detach())
        ratio = torch.exp(logp.detach() - old)[mask.bool()]
        lag = max((s.lag(self.version) for s in rows), default=0)
        kl_ref = 0.0
        if reference is not None:
            kl_ref = float(kl_estimate(logp.detach(), reference, "k3")[mask.bool()].mean())
        self.version += 1
        return StepMetrics(
            version=self.version,
            mean_reward=float(torch.tensor([r.reward for r in rollouts]).mean()),
            loss=float(loss.detach()),
            tokens=int(mask.sum()),
            max_lag=lag,
            ratio_mean=float(ratio.mean()),
            ratio_max_dev=float((ratio - 1).abs().max()),
            feedback_kl=float(feedback.detach()) if feedback is not None else 0.0,
            nonzero_groups=float((spread > 1e-9).float().mean()),
            entropy=float(-old[mask.bool()].mean()),
            kl_ref=kl_ref,
            step_kl=step_kl,
            step_lr=step_lr,
        )

    def _bounded_step(
        self, rows: list[Segment], mask: torch.Tensor, old: torch.Tensor
    ) -> tuple[float, float]:
        """The optimizer step (gradients already computed), kept within `max_step_kl`: a
        step that moved the policy further on the batch's positions is undone (weights and
        Adam's state) and taken again at half the rate; the last try stands. The KL it
        moved (exact over the vocabulary, KL(after || before) per position: what the policy
        would now write that it would not have) and the rate it took. `old`: the batch's
        distributions before the step (the training pass's)."""
        bound, rate = self.config.max_step_kl, self.config.lr
        if bound is None:
            self.optimizer.step()
            return self._position_kl(rows, old, mask), rate
        weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        state = copy.deepcopy(self.optimizer.state_dict())
        for attempt in range(self.config.step_retries):
            for group in self.optimizer.param_groups:
                group["lr"] = rate
            self.optimizer.step()
            moved = self._position_kl(rows, old, mask)
            if moved <= bound or attempt == self.config.step_retries - 1:
                break
            self.model.load_state_dict(weights)
            self.optimizer.load_state_dict(state)
            rate /= 2
        for group in self.optimizer.param_groups:
            group["lr"] = self.config.lr
        return moved, rate

    def _position_kl(self, rows: list[Segment], old: torch.Tensor, mask: torch.Tensor) -> float:
        with torch.no_grad():
            new, _ = segment_distributions(self.model, rows, self.config.replay_routes)
        per_position = (new.exp() * (new - old)).sum(-1)
        return float(per_position[mask.bool()].mean())

    def _reference_logprobs(self, rows: list[Segment]) -> torch.Tensor | None:
        """The batch's token log-probs under the reference (the KL penalty's and `kl_ref`'s)."""
        if self.reference is None:
            return None
        with torch.no_grad():
            ref, _ = segment_logprobs(self.reference, rows, self.config.replay_routes)
        return ref

    def _feedback(self, rows: list[Segment]) -> torch.Tensor | None:
        flagged = [s for s in rows if s.hint]
        if not flagged or self.config.text_feedback_lambda == 0:
            return None
        total = torch.zeros(())
        for segment in flagged:
            total = total + feedback_loss(
                self.model, segment, self.config.text_feedback_lambda, self.config.replay_routes,
                self.reference, self.config.text_feedback_anchor,
            )  # fmt: skip
        return total / len(flagged)

    def delta(self) -> Delta:
        """The weights now, as a delta against what the workers hold (they move to it)."""
        new = _state(self.model)
        delta = encode_delta(
            self.worker_view, new, self.version - 1, self.version, self.config.sync_mode
        )
        self.worker_view = apply_delta(self.worker_view, delta, self.version - 1)
        return delta


def segment_advantages(rollouts: list[Rollout], advantages: torch.Tensor) -> torch.Tensor:
    """One advantage per segment: its rollout's (a self-summarized rollout's segments all
    carry the final reward's advantage)."""
    return torch.tensor(
        [float(a) for r, a in zip(rollouts, advantages, strict=True) for _ in r.segments]
    )


def feedback_loss(
    model: Transformer,
    segment: Segment,
    lam: float,
    replay_routes: bool = True,
    anchor: Transformer | None = None,
    mu: float = 0.0,
) -> torch.Tensor:
    """`lam * KL(student || teacher)` over the segment's own tokens: the student sees the
    context the turn was sampled in, the teacher the same with the hint inserted; with an
    `anchor` model, `mu * KL(student || anchor)` over the context's positions."""
    assert segment.hint is not None
    student_ids = torch.tensor([segment.input_ids])
    teacher_ids = segment.input_ids[: segment.hint_at] + segment.hint
    teacher_ids += segment.input_ids[segment.hint_at :]
    forced = None
    if replay_routes and segment.routes:
        forced = {k: v[None, : student_ids.shape[1]] for k, v in segment.routes.items()}
    student = model(student_ids, forced_routes=forced).logits
    with torch.no_grad():
        teacher = model(torch.tensor([teacher_ids])).logits
    aligned = align_teacher(teacher, segment.hint_at, len(segment.hint))
    target = torch.zeros(1, student_ids.shape[1])
    target[0, len(segment.context) - 1 :] = 1.0
    kept = None
    if anchor is not None and mu > 0:
        with torch.no_grad():
            kept = anchor(student_ids, forced_routes=forced).logits
    return text_feedback_loss(student, aligned, target, lam, kept, mu)
