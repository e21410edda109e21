"""TEMPORARY stand-in until the limits module lands (no limits enforced)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict


class ResourceLimits(BaseModel):
    model_config = ConfigDict(frozen=True)
    memory_bytes: int = 4 << 30
    processes: int = 512
    disk_bytes: int = 2 << 30
    file_bytes: int = 1 << 30
    diff_bytes: int = 16 << 20


class SandboxCgroup:
    def __init__(self, name: str, limits: ResourceLimits) -> None:
        raise NotImplementedError

    def wrap(self, argv: list[str]) -> list[str]:
        return argv

    def limit_hit(self) -> str | None:
        return None

    def close(self) -> None:
        pass


def cgroups_available() -> bool:
    return False


def mount_workspace_tmpfs(path: Path, size_bytes: int) -> bool:
    return False


def unmount(path: Path) -> None:
    pass
