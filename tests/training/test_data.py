"""Corpus dedup and split, packed batches (determinism, resume), SFT masking from trajectories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from harness.agent.trajectory import Trajectory, read_trajectory
from training.chat import AssistantReply, ToolCall, encode_with_mask, render_assistant_body
from training.data import (
    CorpusConfig,
    DataError,
    DataPosition,
    PackedBatches,
    build_tokenizer,
    conversation_from_records,
    corpus_streams,
    evaluation_batches,
    is_held_out,
    load_conversations,
    load_corpus,
    sft_stream,
)
from training.tokenizer import train_tokenizer

BODY = "def f{n}(x):\n    return x * {n} + {n}\n\n\nclass K{n}:\n    value = {n}\n"


def _write_corpus(root: Path, unique: int) -> None:
    package = root / "pkg"
    package.mkdir(parents=True)
    for n in range(unique):
        (package / f"m{n}.py").write_text(BODY.format(n=n))
    (package / "copy_of_m0.py").write_text(BODY.format(n=0))  # exact duplicate
    spaced = BODY.format(n=1).replace("    return", "\treturn").replace("\n\n\n", "\n \n")
    (package / "respaced_m1.py").write_text(spaced)  # duplicate up to whitespace
    (package / "notes.txt").write_text(BODY.format(n=99))  # not Python: ignored
    (package / "tiny.py").write_text("x = 1\n")  # under min_file_bytes


def test_corpus_drops_exact_and_whitespace_duplicates_and_splits_by_file(tmp_path: Path) -> None:
    _write_corpus(tmp_path / "src", unique=40)
    config = CorpusConfig(
        roots=[tmp_path / "src"], min_file_bytes=20, held_out_fraction=0.25, cache_dir=tmp_path
    )
    corpus = load_corpus(config)
    documents = corpus.train + corpus.heldout
    texts = [d.text for d in documents]
    assert corpus.duplicates_dropped == 2
    assert len(documents) == 40 and len(set(texts)) == 40
    assert not {d.name for d in corpus.train} & {d.name for d in corpus.heldout}
    names = {d.name.removeprefix("src/pkg/") for d in documents}
    assert len(names & {"m0.py", "copy_of_m0.py"}) == 1  # one copy kept, whichever came first
    assert len(names & {"m1.py", "respaced_m1.py"}) == 1
    assert not names & {"notes.txt", "tiny.py"}
    assert 3 <= len(corpus.heldout) <= 20  # about a quarter of 40
    # the split is a function of the content alone: stable across runs and machines
    assert all(is_held_out(d.text, 0.25) for d in corpus.heldout)
    assert not any(is_held_out(d.text, 0.25) for d in corpus.train)


def test_streams_join_documents_with_eos_and_tokenizer_is_cached(tmp_path: Path) -> None:
    _write_corpus(tmp_path / "src", unique=12)
    config = CorpusConfig(roots=[tmp_path / "src"], min_file_bytes=20, cache_dir=tmp_path / "c")
    tokenizer, path = build_tokenizer(config, vocab_size=300)
    assert path.is_file() and path.is_relative_to(tmp_path / "c")
    again, same_path = build_tokenizer(config, vocab_size=300)
    assert same_path == path and again.inner.to_str() == tokenizer.inner.to_str()
    streams = corpus_streams(config, tokenizer)
    corpus = load_corpus(config)
    assert int((streams.train == tokenizer.eos_id).sum()) == len(corpus.train)
    first = tokenizer.decode(streams.train[: int(np.argmax(streams.train == tokenizer.eos_id))])
    assert first == corpus.train[0].text


def test_packed_batches_cover_each_window_once_per_epoch_and_resume_exactly() -> None:
    stream = np.arange(1000, dtype=np.int32)
    batches = PackedBatches(stream, batch_size=4, seq_len=9, seed=7)  # 100 windows of 10
    assert batches.n_windows == 100 and batches.batches_per_epoch == 25
    first_epoch = [batches.next_batch() for _ in range(25)]
    starts = torch.cat([b.tokens[:, 0] for b in first_epoch])
    assert sorted(starts.tolist()) == list(range(0, 1000, 10))
    for batch in first_epoch:  # each row is a contiguous window: no padding, no gaps
        assert batch.tokens.shape == (4, 10) and batch.loss_mask is None
        assert torch.equal(batch.tokens - batch.tokens[:, :1], torch.arange(10).expand(4, 10))
    second = batches.next_batch()
    assert batches.position == DataPosition(epoch=1, cursor=4)
    assert not torch.equal(second.tokens, first_epoch[0].tokens)  # a new order each epoch

    straight = PackedBatches(stream, 4, 9, seed=7)
    run = [straight.next_batch().tokens for _ in range(40)]
    resumed_at = PackedBatches(stream, 4, 9, seed=7)
    for _ in range(31):
        resumed_at.next_batch()
    resumed = PackedBatches(stream, 4, 9, seed=7, position=resumed_at.position)
    assert all(torch.equal(resumed.next_batch().tokens, run[i]) for i in range(31, 40))
    other_seed = PackedBatches(stream, 4, 9, seed=8).next_batch().tokens
    assert not torch.equal(other_seed, run[0])


def test_a_stream_too_short_for_one_batch_is_a_clear_error() -> None:
    with pytest.raises(DataError, match="a batch needs 4"):
        PackedBatches(np.arange(30, dtype=np.int32), batch_size=4, seq_len=9, seed=0)


def _agent_trajectory(path: Path) -> None:
    """An attempt written by the harness's own trajectory writer, shaped like the agent loop's."""
    with Trajectory(path, {"task_id": "t", "epoch": 1, "model": "m"}) as trajectory:
        trajectory.write("message", role="system", content="You are a coding agent.")
        trajectory.write("message", role="user", content="Fix slugify for unicode input.")
        call = {"id": "c1", "type": "function"}
        read = {**call, "function": {"name": "read_file", "arguments": '{"path": "slug.py"}'}}
        trajectory.write(
            "model",
            message={"role": "assistant", "content": "Reading it.", "tool_calls": [read]},
            finish_reason="tool_calls",
            usage={},
        )
        trajectory.write(
            "tool", id="c1", name="read_file", arguments="{}", output="def slug(): ..."
        )
        finish: dict[str, Any] = {"id": "c2", "type": "function"}
        finish["function"] = {"name": "finish", "arguments": '{"summary": "done"}'}
        trajectory.write(
            "model",
            message={"role": "assistant", "content": None, "tool_calls": [finish]},
            finish_reason="tool_calls",
            usage={},
        )
        trajectory.write("tool", id="c2", name="finish", arguments='{"summary": "done"}')
        trajectory.write("agent_end", failure=None, message="done")
        trajectory.write("result", result={"status": "resolved"})


def test_sft_loss_mask_is_exactly_the_assistant_output(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _agent_trajectory(run / "trajectories" / "t__1.jsonl")
    records = read_trajectory(run / "trajectories" / "t__1.jsonl")
    conversation = conversation_from_records(records, tools=[{"name": "read_file"}])
    roles = [m["role"] for m in conversation.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]  # finish: no result
    assert load_conversations(run)[0].messages == conversation.messages

    tokenizer = train_tokenizer([BODY.format(n=n) for n in range(20)], vocab_size=300)
    ids, mask = encode_with_mask(tokenizer, conversation.messages, conversation.tools)
    trained = tokenizer.decode([i for i, m in zip(ids, mask, strict=True) if m])
    expected = render_assistant_body(
        AssistantReply("Reading it.", [ToolCall("read_file", {"path": "slug.py"})])
    ) + render_assistant_body(AssistantReply("", [ToolCall("finish", {"summary": "done"})]))
    assert trained == expected
    untrained = tokenizer.decode([i for i, m in zip(ids, mask, strict=True) if not m])
    assert "Fix slugify" in untrained and "def slug(): ..." in untrained
    assert "Reading it." not in untrained

    stream, stream_mask = sft_stream(tokenizer, [conversation, conversation])
    assert list(stream) == ids + ids and list(stream_mask) == mask + mask


def test_packed_batches_carry_the_mask_of_their_targets() -> None:
    stream = np.arange(640, dtype=np.int32)  # a token's value is its position
    stream_mask = np.random.default_rng(0).random(640) < 0.5
    batches = PackedBatches(stream, batch_size=2, seq_len=31, seed=0, mask=stream_mask)
    for _ in range(batches.batches_per_epoch):
        batch = batches.next_batch()
        assert batch.loss_mask is not None and batch.loss_mask.shape == batch.targets.shape
        for targets, target_mask in zip(batch.targets, batch.loss_mask, strict=True):
            assert torch.equal(target_mask, torch.from_numpy(stream_mask[targets.numpy()]))


def test_unresolved_attempts_are_left_out_unless_asked(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _agent_trajectory(run / "trajectories" / "t__1.jsonl")
    path = run / "trajectories" / "t__1.jsonl"
    path.write_text(path.read_text().replace('"status": "resolved"', '"status": "failed"'))
    with pytest.raises(DataError, match="no usable trajectories"):
        load_conversations(run)
    assert len(load_conversations(run, only_resolved=False)) == 1


def test_evaluation_batches_spread_over_the_stream_and_skip_untrained_windows() -> None:
    stream = np.arange(1000, dtype=np.int32)
    plain = evaluation_batches(stream, batch_size=4, seq_len=9, max_batches=2)
    starts = torch.cat([b.tokens[:, 0] for b in plain]).tolist()
    assert len(starts) == 8 and starts[0] == 0 and starts[-1] == 990  # first to last window
    mask = np.zeros(1000, dtype=np.bool_)
    mask[500:520] = True  # targets in windows 50 and 51 (token 500 starts 50: no target)
    masked = evaluation_batches(stream, batch_size=4, seq_len=9, max_batches=2, mask=mask)
    assert torch.cat([b.tokens[:, 0] for b in masked]).tolist() == [500, 510]
    with pytest.raises(DataError, match="no window"):
        evaluation_batches(stream, 4, 9, 2, mask=np.zeros(1000, dtype=np.bool_))
