"""Text feedback in the learner step and self-summarization in the policy's chat model, on
toy models (no sandbox: the chat model is driven with the messages an agent loop sends)."""

from __future__ import annotations

import torch

from training.model import ModelConfig, Transformer
from training.rl.env import PolicyChatModel
from training.rl.learner import Learner, LearnerConfig, Rollout, feedback_loss, segment_advantages
from training.rl.policy import Sampler, Segment
from training.rl_losses import group_advantages
from training.tokenizer import CodeTokenizer, train_tokenizer

TOOL = {"type": "function", "function": {"name": "edit_file", "parameters": {}}}


def _tokenizer() -> CodeTokenizer:
    texts = ["edit_file read_file Summarize the work so far. Hint: the only tools are"] * 4
    return train_tokenizer(texts, 300)


def _model(vocab: int, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(ModelConfig(vocab_size=vocab, d_model=32, n_layers=1, n_heads=2, d_ff=64))


def test_text_feedback_in_the_learner_step_pulls_the_flagged_turn_to_the_teacher() -> None:
    tokenizer = _tokenizer()
    model = _model(tokenizer.vocab_size)
    sampler = Sampler(model)
    flagged = sampler.sample(tokenizer.encode("<|user|>go<|end|><|assistant|>"), 8, set(), 0)
    flagged.hint = tokenizer.encode("<|user|>Hint: the only tools are edit_file<|end|>")
    flagged.hint_at = len(flagged.context) - 1
    plain = sampler.sample(tokenizer.encode("<|user|>go<|end|><|assistant|>"), 8, set(), 1)
    config = LearnerConfig(group_size=2, max_tokens=8, lr=1e-2, text_feedback_lambda=1.0)
    learner = Learner(model, config)
    before = float(feedback_loss(model, flagged, 1.0).detach())
    for _ in range(20):  # equal rewards: zero advantages, only the feedback term trains
        metrics = learner.step([Rollout("t", 0, [flagged], 1.0), Rollout("t", 0, [plain], 1.0)])
    after = float(feedback_loss(model, flagged, 1.0).detach())
    assert metrics.feedback_kl > 0
    assert after < before / 10


def test_a_call_to_a_tool_not_offered_flags_its_turn_with_a_hint() -> None:
    tokenizer = _tokenizer()
    sampler = Sampler(_model(tokenizer.vocab_size))
    chat = PolicyChatModel(sampler, tokenizer, 4096, 4, offered=["edit_file"], seed=0)
    sampled = tokenizer.encode('<|tool_call|>{"name": "read_file", "arguments": {}}')
    sampled += tokenizer.encode("<|end_tool_call|><|end|>")

    def scripted(context: list[int], max_tokens: int, stop: set[int], seed: int | None) -> Segment:
        segment = Sampler.sample(sampler, context, 1, stop, seed)
        segment.tokens = sampled  # what the policy "wrote" (the sampled id replaced)
        return segment

    sampler.sample = scripted  # type: ignore[method-assign,assignment]
    reply = chat.complete([{"role": "user", "content": "go"}], [TOOL])
    assert [c.name for c in reply.tool_calls] == ["read_file"]
    assert chat.segments[0].hint is not None
    assert "edit_file" in tokenizer.decode(chat.segments[0].hint)


def test_a_rollout_that_outgrows_its_context_summarizes_and_goes_on() -> None:
    tokenizer = _tokenizer()
    sampler = Sampler(_model(tokenizer.vocab_size))
    messages = [
        {"role": "system", "content": "edit_file"},
        {"role": "user", "content": "read_file"},
        {"role": "assistant", "content": "edit_file " * 60},
        {"role": "tool", "content": "read_file " * 60},
    ]
    first = len(tokenizer.encode("".join(str(m["content"]) for m in messages[:2])))
    context = first + 60  # the task fits; the history after it does not
    chat = PolicyChatModel(sampler, tokenizer, context, 8, seed=0)
    chat.complete(messages, [])
    kinds = [s.kind for s in chat.segments]
    assert kinds == ["summary", "turn"]
    assert all(len(s.context) + 8 <= context for s in chat.segments)
    assert chat.summary is not None
    # the final reward applies to every segment: one advantage per rollout, on each segment
    rollouts = [Rollout("t", 0, chat.segments, 1.0), Rollout("t", 0, chat.segments[:1], 0.0)]
    advantages = group_advantages(torch.tensor([1.0, 0.0]), 2)
    per_segment = segment_advantages(rollouts, advantages)
    assert per_segment.tolist() == [0.5, 0.5, -0.5]
