"""FSDP2 over two meshes with sharded Muon: 2 gloo processes match one process.

The parity test launches two real ranks the way torchrun does (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT on a free port) running `python -m training.distributed`, and compares their losses
and final weights with the single-process run that accumulates the same two micro-batches,
for two mesh layouts at once: experts split over both ranks, and experts replicated (an expert
mesh of shape 2 x 1 beside the 1 x 2 dense mesh).
The model is chosen so both Muon paths run: experts split unevenly (2 + 1, aligned: local
Newton-Schulz), 3 heads over 2 ranks and whole matrices (`wo`, SwiGLU, MTP: owner exchange).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
import yaml

from training.checkpoint import latest_checkpoint, load_model
from training.distributed import (
    DistributedRunConfig,
    RowShards,
    ShardedMuon,
    assign_owners,
    chunk_rows,
    load_run_config,
    main,
    mesh_shape,
    train_single_process,
)
from training.model import Transformer
from training.muon import Muon, parameter_roles

REPO = Path(__file__).resolve().parents[2]

CONFIG = REPO / "training" / "configs" / "distributed_check.yaml"
RUN = yaml.safe_load(CONFIG.read_text())


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """One intra-op thread: the ranks run beside the reference, and on a busy 2-core machine
    OpenMP's spinning threads made a 20 ms optimizer step take seconds."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch_ranks(config: Path, out: Path, world_size: int) -> list[subprocess.Popen[str]]:
    """Start `world_size` ranks with the environment torchrun would give them."""
    port = free_port()
    ranks = []
    for rank in range(world_size):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(world_size),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        command = [sys.executable, "-m", "training.distributed", "--config", str(config)]
        ranks.append(
            subprocess.Popen(
                [*command, "--out", str(out)],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    return ranks


def test_chunk_rows_follows_torch_chunk() -> None:
    for rows in range(1, 12):
        for parts in range(1, 5):
            expected = [len(c) for c in torch.arange(rows).chunk(parts)]
            got = chunk_rows(rows, parts)
            assert got[: len(expected)] == expected
            assert sum(got) == rows and all(r == 0 for r in got[len(expected) :])


def test_aligned_means_every_rank_holds_whole_blocks() -> None:
    def shards(shape: tuple[int, ...], parts: int) -> RowShards:
        return RowShards(None, 0, tuple(chunk_rows(shape[0], parts)), torch.Size(shape))

    assert shards((3, 24, 48), 2).aligned(3)  # experts 2 + 1
    assert shards((64, 32), 2).aligned(4)  # 4 heads of 16 rows: 2 heads each
    assert not shards((48, 48), 2).aligned(3)  # 3 heads of 16 rows cut at row 24
    assert not shards((48, 48), 2).aligned(1)  # a whole matrix over 2 ranks
    assert shards((48, 48), 1).aligned(1)


def test_owners_balance_largest_first_and_agree() -> None:
    sizes = [10, 40, 30, 20, 5]
    owners = assign_owners(sizes, 2)
    load = [sum(s for s, o in zip(sizes, owners, strict=True) if o == r) for r in range(2)]
    assert owners == assign_owners(sizes, 2)
    assert sorted(load) == [50, 55]


def test_mesh_shape_rejects_a_degree_that_does_not_divide() -> None:
    assert mesh_shape(8, 4, "expert") == (2, 4)
    assert mesh_shape(8, None, "dense") == (1, 8)
    with pytest.raises(ValueError, match="expert shard degree 3 does not divide 8 ranks"):
        mesh_shape(8, 3, "expert")


def test_sharded_muon_on_plain_tensors_equals_muon() -> None:
    torch.manual_seed(0)
    model = Transformer(DistributedRunConfig.model_validate(RUN).model_settings())
    muon_params = [(r.param, r.blocks) for r in parameter_roles(model) if r.optimizer == "muon"]
    copies = [(p.detach().clone().requires_grad_(), b) for p, b in muon_params]
    for (param, _), (twin, _) in zip(muon_params, copies, strict=True):
        param.grad = torch.randn_like(param)
        twin.grad = param.grad.clone()
    reference = Muon([{"params": [p], "blocks": b} for p, b in muon_params], lr=0.02)
    sharded = ShardedMuon([{"params": [p], "blocks": b} for p, b in copies], lr=0.02)
    for _ in range(2):
        reference.step()
        sharded.step()
    for (param, _), (twin, _) in zip(muon_params, copies, strict=True):
        torch.testing.assert_close(twin, param, rtol=1e-6, atol=1e-7)


def test_bad_config_and_missing_torchrun_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: 0\n")
    with pytest.raises(ValueError, match="bad run config"):
        load_run_config(bad)
    assert main(["--config", str(bad), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {bad}: bad run config")
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(RUN))
    monkeypatch.delenv("RANK", raising=False)
    assert main(["--config", str(good), "--out", str(tmp_path / "out")]) == 2
    assert "not launched by torchrun" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def muon_paths(config: DistributedRunConfig, world_size: int) -> dict[str, list[str]]:
    """Which Muon parameters each rank orthogonalizes alone and which go through an owner."""
    paths: dict[str, list[str]] = {"local": [], "exchanged": []}
    for role in parameter_roles(Transformer(config.model_settings())):
        if role.optimizer == "muon":
            shape = role.param.shape
            shards = RowShards(None, 0, tuple(chunk_rows(shape[0], world_size)), shape)
            paths["local" if shards.aligned(role.blocks) else "exchanged"].append(role.name)
    return paths


@pytest.mark.slow
def test_two_gloo_ranks_match_one_process(tmp_path: Path) -> None:
    paths = muon_paths(load_run_config(CONFIG), world_size=2)
    assert any(name.endswith("ffn.w1") for name in paths["local"])  # experts split 2 + 1
    assert any(name.endswith("attn.wq.weight") for name in paths["exchanged"])  # 3 heads cut
    # Two mesh layouts, run at once: the shipped one (experts split over both ranks) and one
    # whose expert mesh differs from the dense mesh (experts replicated: ep_replicate = 2).
    replicated = tmp_path / "experts_replicated.yaml"
    replicated.write_text(yaml.safe_dump({**RUN, "expert_shard": 1}))
    layouts = {"experts_split": CONFIG, "experts_replicated": replicated}
    started = time.monotonic()
    ranks = {name: launch_ranks(file, tmp_path / name, 2) for name, file in layouts.items()}
    try:
        # The reference runs here while the ranks start up; the layout does not change it.
        config = load_run_config(CONFIG)
        losses, reference = train_single_process(config, world_size=2)
        logs = {
            name: [r.communicate(timeout=180)[0] for r in group] for name, group in ranks.items()
        }
    finally:
        for group in ranks.values():
            for rank in group:
                rank.kill()
    for name, group in ranks.items():
        for rank, log in zip(group, logs[name], strict=True):
            assert rank.returncode == 0, f"{name}: {log[-3000:]}"
    print(f"2 x 2 ranks and the reference: {time.monotonic() - started:.1f} s")

    assert losses[-1] < losses[0] - 0.5  # it learns the successor table, not just matches
    torch.manual_seed(config.seed)
    initial = Transformer(config.model_settings()).state_dict()
    for name in layouts:
        out = tmp_path / name
        assert json.loads((out / "losses.json").read_text()) == pytest.approx(losses, rel=1e-6)
        checkpoint = latest_checkpoint(out)
        assert checkpoint is not None and checkpoint.step == RUN["steps"]
        trained = load_model(checkpoint.path).state_dict()
        # atol 1e-5 is 1/2000 of one lr step: AdamW divides by sqrt(v), so float-order noise in
        # a small gradient moves a weight by ~1e-6 here; a wrong shard exchange moves it ~1e-2.
        for key, expected in reference.state_dict().items():
            assert not torch.equal(expected, initial[key]), f"{key} did not train"
            torch.testing.assert_close(
                trained[key], expected, rtol=1e-5, atol=1e-5, msg=_prefixed(key)
            )


def _prefixed(key: str) -> Callable[[str], str]:
    """A failure message that names the weight."""
    return lambda message: f"{key}: {message}"
