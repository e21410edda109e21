"""RL losses against hand computations, closed forms, enumeration and a toy policy."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from training.rl_losses import (
    aggregate_token_loss,
    clipped_surrogate,
    group_advantages,
    kl_estimate,
    kl_loss_term,
    kl_shaped_rewards,
    length_penalty,
)


def test_group_advantages_centre_each_group_without_scaling() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 3.0, 1.0])
    advantages = group_advantages(rewards, group_size=3)
    # group 1: mean 1/3 -> 2/3, -1/3, -1/3; group 2: mean 5/3 -> -2/3, 4/3, -2/3
    expected = torch.tensor([2 / 3, -1 / 3, -1 / 3, -2 / 3, 4 / 3, -2 / 3])
    torch.testing.assert_close(advantages, expected)
    torch.testing.assert_close(advantages.view(2, 3).sum(1), torch.zeros(2))


def test_group_advantages_std_scaling_is_grpo() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0])
    # unbiased std of [1, 0, 0, 1] is sqrt(1/3); centred values are +-1/2
    scaled = group_advantages(rewards, group_size=4, scale_std=True, eps=0.0)
    torch.testing.assert_close(scaled, torch.tensor([1.0, -1.0, -1.0, 1.0]) * 0.5 * math.sqrt(3))


def test_group_advantages_reject_ragged_groups() -> None:
    with pytest.raises(ValueError):
        group_advantages(torch.zeros(5), group_size=2)


# Two groups of two responses; lengths 1, 3 | 2, 2 (T = 4).
LOSS = torch.tensor(
    [[2.0, 9.0, 9.0, 9.0], [1.0, 1.0, 4.0, 9.0], [3.0, 3.0, 9.0, 9.0], [5.0, 1.0, 9.0, 9.0]]
)
MASK = torch.tensor([[1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 0, 0]])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # sums: 2, 6, 6, 6 -> total 20, over N=4 responses x constant 5
        ("dr_grpo", 20 / (4 * 5)),
        # per-response means 2, 2, 3, 3 -> 2.5
        ("grpo", 2.5),
        # 20 over 8 tokens
        ("bnpo", 20 / 8),
        # group 1: 8 / 4 tokens = 2; group 2: 12 / 4 = 3 -> 2.5
        ("dapo", 2.5),
    ],
)
def test_aggregations_by_hand(mode: str, expected: float) -> None:
    value = aggregate_token_loss(LOSS, MASK, mode, group_size=2, constant=5.0)  # type: ignore[arg-type]
    assert value.item() == pytest.approx(expected)


def test_dapo_differs_from_bnpo_when_groups_have_unequal_tokens() -> None:
    mask = torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]])
    loss = torch.tensor([[1.0] * 4, [1.0] * 4, [2.0] * 4, [2.0] * 4])
    # bnpo: (1 + 1 + 8 + 8) / 10 = 1.8; dapo: mean(2/2, 16/8) = 1.5
    assert aggregate_token_loss(loss, mask, "bnpo").item() == pytest.approx(1.8)
    assert aggregate_token_loss(loss, mask, "dapo", group_size=2).item() == pytest.approx(1.5)


def test_dr_grpo_unchanged_by_padding_and_weighs_every_token_equally() -> None:
    logits = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    padded_mask = torch.cat([MASK, torch.zeros(4, 7, dtype=MASK.dtype)], dim=1)
    base = aggregate_token_loss(logits, MASK, "dr_grpo", constant=16.0)
    padded_input = torch.cat([logits, torch.full((4, 7), 123.0, dtype=torch.float64)], dim=1)
    padded = aggregate_token_loss(padded_input, padded_mask, "dr_grpo", constant=16.0)
    torch.testing.assert_close(base, padded)
    (grad,) = torch.autograd.grad(base, logits)
    # every response token weighs 1 / (N * constant), whatever its response's length
    torch.testing.assert_close(grad, MASK.double() / (4 * 16.0))
    (grpo_grad,) = torch.autograd.grad(aggregate_token_loss(logits, MASK, "grpo"), logits)
    lengths = MASK.sum(1, keepdim=True).double()
    torch.testing.assert_close(grpo_grad, MASK.double() / (4 * lengths))


def test_dr_grpo_needs_its_constant() -> None:
    with pytest.raises(ValueError):
        aggregate_token_loss(LOSS, MASK, "dr_grpo")


def test_unclipped_surrogate_gradient_is_the_policy_gradient() -> None:
    logp = torch.log(torch.tensor([[0.3, 0.6]], dtype=torch.float64)).requires_grad_()
    advantages = torch.tensor([2.0], dtype=torch.float64)
    loss = clipped_surrogate(logp, logp.detach(), advantages).sum()
    (grad,) = torch.autograd.grad(loss, logp)
    # d/dlogp of -exp(logp - old) * A at logp = old is -A
    torch.testing.assert_close(grad, torch.full((1, 2), -2.0, dtype=torch.float64))


def test_clipping_stops_the_gradient_outside_the_trust_region() -> None:
    old = torch.zeros(1, 4, dtype=torch.float64)
    # ratios 1.5 and 0.5 (outside [0.8, 1.2]) and 1.1, 0.9 (inside)
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.1, 0.9]], dtype=torch.float64)).requires_grad_()
    for sign in (1.0, -1.0):
        advantage = torch.tensor([sign], dtype=torch.float64)
        loss = clipped_surrogate(logp, old, advantage).sum()
        (grad,) = torch.autograd.grad(loss, logp)
        ratio = logp.detach().exp()[0]
        # A > 0: clipped where ratio > 1.2; A < 0: clipped where ratio < 0.8
        clipped = [0] if sign > 0 else [1]
        for index in range(4):
            expected = 0.0 if index in clipped else -sign * ratio[index].item()
            assert grad[0, index].item() == pytest.approx(expected)
        # and the value is the pessimistic one: A > 0 caps ratio 1.5 at 1.2
        if sign > 0:
            assert loss.item() == pytest.approx(-(1.2 + 0.5 + 1.1 + 0.9))


def test_surrogate_passes_gradcheck_inside_the_trust_region() -> None:
    old = torch.zeros(2, 3, dtype=torch.float64)
    logp = (torch.rand(2, 3, dtype=torch.float64) * 0.2 - 0.1).requires_grad_()
    advantages = torch.tensor([0.7, -1.3], dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda x: clipped_surrogate(x, old, advantages, 0.2, 0.28), (logp,)
    )


def _gaussian_log_ratio_samples(mu: float, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Samples x ~ pi = N(0, 1) with log pi(x) and log pi_ref(x), pi_ref = N(mu, 1)."""
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(n, generator=generator, dtype=torch.float64)
    return -0.5 * x.pow(2), -0.5 * (x - mu).pow(2)


@pytest.mark.parametrize("kl", [0.05, 1.0])
def test_k1_k3_unbiased_and_their_spread_matches_closed_forms(kl: float) -> None:
    mu_sq = 2 * kl  # KL(N(0,1) || N(mu,1)) = mu^2 / 2
    logp, logp_ref = _gaussian_log_ratio_samples(math.sqrt(mu_sq), 2_000_000)
    k1, k2, k3 = (kl_estimate(logp, logp_ref, e) for e in ("k1", "k2", "k3"))
    # log r = mu x - mu^2/2: Var k1 = mu^2; Var k3 = e^{mu^2} - 1 - mu^2; E k2 = (mu^2 + mu^4/4)/2
    var_k1, var_k3 = mu_sq, math.exp(mu_sq) - 1 - mu_sq
    n = k1.numel()
    assert abs(k1.mean().item() - kl) < 5 * math.sqrt(var_k1 / n)
    assert abs(k3.mean().item() - kl) < 5 * math.sqrt(var_k3 / n)
    assert k2.mean().item() == pytest.approx((mu_sq + mu_sq**2 / 4) / 2, rel=0.01)
    assert k1.var().item() == pytest.approx(var_k1, rel=0.02)
    assert k3.var().item() == pytest.approx(var_k3, rel=0.1)
    assert bool((k3 >= 0).all())
    if kl >= 1.0:
        assert k3.std() > k1.std()
    else:
        assert k3.std() < k1.std()


# A 4-armed bandit: softmax policy, a fixed reference and per-arm rewards, enumerated exactly.
REWARDS = torch.tensor([1.0, 0.0, 0.5, 2.0], dtype=torch.float64)
REF_LOGP = torch.log_softmax(torch.tensor([0.3, -0.2, 0.8, -1.0], dtype=torch.float64), 0)
BETA = 0.7


def _bandit() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    theta = torch.tensor([0.1, 0.5, -0.4, 0.2], dtype=torch.float64, requires_grad=True)
    logp = torch.log_softmax(theta, 0)
    return theta, logp, logp.exp().detach()


def _exact_gradient(reverse: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients of E_pi[r] and of KL(pi || ref) (or KL(ref || pi)) from their closed forms."""
    theta = torch.tensor([0.1, 0.5, -0.4, 0.2], dtype=torch.float64, requires_grad=True)
    logp = torch.log_softmax(theta, 0)
    p = logp.exp()
    expected_reward = (p * REWARDS).sum()
    forward_kl = (p * (logp - REF_LOGP)).sum()
    reverse_kl = (REF_LOGP.exp() * (REF_LOGP - logp)).sum()
    kl = reverse_kl if reverse else forward_kl
    (g_reward,) = torch.autograd.grad(expected_reward, theta, retain_graph=True)
    (g_kl,) = torch.autograd.grad(kl, theta)
    return g_reward, g_kl


def test_k1_in_the_reward_gives_the_exact_kl_regularized_gradient() -> None:
    theta, logp, weights = _bandit()
    mask = torch.ones(4, 1, dtype=torch.float64)
    shaped = kl_shaped_rewards(REWARDS, logp[:, None], REF_LOGP[:, None], mask, BETA)
    # the score-function surrogate, every arm weighted by its (detached) probability
    surrogate = (weights * shaped.detach() * logp).sum()
    (grad,) = torch.autograd.grad(surrogate, theta)
    g_reward, g_kl = _exact_gradient()
    torch.testing.assert_close(grad, g_reward - BETA * g_kl)
    assert not shaped.requires_grad  # the penalty is detached: it acts through the reward only


@pytest.mark.parametrize(("estimator", "target"), [("k1", "zero"), ("k2", "kl"), ("k3", "reverse")])
def test_kl_in_the_loss_gradients_by_enumeration(estimator: str, target: str) -> None:
    theta, logp, weights = _bandit()
    # enumerate on-policy samples: arm a with weight pi(a) (as a rollout would, N -> infinity)
    token_kl = kl_estimate(logp, REF_LOGP, estimator)  # type: ignore[arg-type]
    (grad,) = torch.autograd.grad((weights * token_kl).sum(), theta)
    if target == "zero":
        torch.testing.assert_close(grad, torch.zeros(4, dtype=torch.float64))
    else:
        _, g_kl = _exact_gradient(reverse=target == "reverse")
        torch.testing.assert_close(grad, g_kl)


def test_kl_loss_term_is_beta_times_the_aggregated_estimate() -> None:
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -0.1]])
    ref = torch.tensor([[-1.5, -1.0], [-0.5, -0.3]])
    mask = torch.tensor([[1, 1], [1, 0]])
    value = kl_loss_term(logp, ref, mask, beta=0.1, estimator="k1", mode="bnpo")
    # k1 = logp - ref on masked tokens: 0.5, -1.0, 0.0 -> mean -1/6
    assert value.item() == pytest.approx(0.1 * (-0.5 / 3))


def test_length_penalty_shape_and_limits() -> None:
    x = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    for q in (0.0, 0.5, 0.9, 1.0, 2.0):
        value = length_penalty(x, k=0.3, q=q)
        (d1,) = torch.autograd.grad(value.sum(), x, create_graph=True)
        assert value.item() == 0.0
        assert d1.item() == pytest.approx(1.0)
    points = torch.linspace(0, 50, 11, dtype=torch.float64, requires_grad=True)
    for q in (0.5, 1.0, 2.0):
        (d1,) = torch.autograd.grad(length_penalty(points, 0.3, q).sum(), points, create_graph=True)
        (d2,) = torch.autograd.grad(d1.sum(), points)
        assert bool((d2 < 0).all()), q
    # closed forms: q = 1/2 -> 2 (sqrt(1 + kx) - 1) / k; q = 2 -> x / (1 + kx)
    xs = torch.tensor([0.0, 1.0, 7.0, 300.0], dtype=torch.float64)
    k = 0.25
    torch.testing.assert_close(length_penalty(xs, k, 0.5), 2 * (torch.sqrt(1 + k * xs) - 1) / k)
    torch.testing.assert_close(length_penalty(xs, k, 2.0), xs / (1 + k * xs))
    # q -> 1: log(1 + kx) / k, approached continuously from both sides
    limit = torch.log(1 + k * xs) / k
    torch.testing.assert_close(length_penalty(xs, k, 1.0), limit)
    for q in (1 - 1e-7, 1 + 1e-7):
        torch.testing.assert_close(length_penalty(xs, k, q), limit, rtol=1e-5, atol=1e-9)


def test_length_penalty_gradcheck() -> None:
    xs = (torch.rand(5, dtype=torch.float64) * 20).requires_grad_()
    for q in (0.3, 1.0, 1.7):
        assert torch.autograd.gradcheck(lambda t, q=q: length_penalty(t, 0.5, q), (xs,))


def _wrong_answer_length_ratio(dr_grpo: bool, steps: int = 150, cap: int = 48) -> float:
    """A toy policy: the answer is right or wrong with probability 1/2 (a prompt it cannot
    learn), then it emits `continue` tokens with a per-branch probability until `stop`.
    Reward = correct. Returns the wrong answers' mean length at the end over the start."""
    generator = torch.Generator().manual_seed(0)
    theta = torch.nn.Parameter(torch.tensor([1.0, 1.0], dtype=torch.float64))  # right, wrong
    optimizer = torch.optim.Adam([theta], lr=0.02)
    groups, group_size = 32, 8
    n = groups * group_size
    positions = torch.arange(cap + 1)
    lengths: list[float] = []
    for _ in range(steps):
        correct = torch.rand(n, generator=generator) < 0.5
        logit = theta[(~correct).long()]
        keep_going = (
            torch.rand(n, cap, generator=generator) < torch.sigmoid(logit.detach())[:, None]
        )
        stops = torch.where(keep_going.all(1), cap, (~keep_going).double().argmax(1))
        is_continue = positions[None] < stops[:, None]
        logp = torch.where(is_continue, F.logsigmoid(logit)[:, None], F.logsigmoid(-logit)[:, None])
        # the stop token counts too, unless the response ran into the cap without one
        mask = is_continue | ((positions[None] == stops[:, None]) & (stops[:, None] < cap))
        advantages = group_advantages(correct.double(), group_size, scale_std=not dr_grpo)
        token_loss = clipped_surrogate(logp, logp.detach(), advantages)
        if dr_grpo:
            loss = aggregate_token_loss(token_loss, mask, "dr_grpo", constant=cap + 1)
        else:
            loss = aggregate_token_loss(token_loss, mask, "grpo")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lengths.append(mask[~correct].sum(1).double().mean().item())
    return (sum(lengths[-10:]) / 10) / (sum(lengths[:10]) / 10)


def test_grpo_grows_wrong_answers_and_dr_grpo_does_not() -> None:
    torch.set_num_threads(1)
    assert _wrong_answer_length_ratio(dr_grpo=False) > 2.0
    assert _wrong_answer_length_ratio(dr_grpo=True) < 1.2
