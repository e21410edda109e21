"""A private git repository that remembers a workspace's starting state.

The git directory lives outside the workspace (the agent never sees it), and
git runs with hooks, fsmonitor and user config disabled, so nothing planted in
the workspace is executed by the harness.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

# Never part of a change. Everything else is, even what the workspace's own .gitignore names.
NOT_CHANGES = (
    "**/__pycache__/**",
    "**/*.pyc",
    "**/.pytest_cache/**",
    "**/.mypy_cache/**",
    "**/.ruff_cache/**",
    "**/*.egg-info/**",
)


class BaselineError(RuntimeError):
    pass


class Baseline:
    def __init__(self, git_dir: Path, work_tree: Path) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree

    def _git(self, *args: str) -> str:
        argv = [
            "git",
            f"--git-dir={self.git_dir}",
            f"--work-tree={self.work_tree}",
            "-c", "core.hooksPath=/dev/null",
            "-c", "core.fsmonitor=false",
            "-c", "core.autocrlf=false",
            "-c", "core.quotePath=false",
            "-c", "user.name=cursorbench",
            "-c", "user.email=cursorbench@localhost",
            "-c", "commit.gpgSign=false",
            *args,
        ]  # fmt: skip
        env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(self.git_dir), "PATH": "/usr/bin:/bin"}
        done = subprocess.run(argv, cwd=self.work_tree, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip().splitlines()
            raise BaselineError(f"git {args[0]} failed: {message[-1] if message else '?'}")
        return done.stdout

    def _add_everything(self) -> None:
        excluded = [f":(exclude,glob){pattern}" for pattern in NOT_CHANGES]
        self._git("add", "-A", "--force", "--", ".", *excluded)

    def snapshot(self) -> None:
        self._git("init", "-q")
        self._add_everything()
        self._git("commit", "-q", "--allow-empty", "-m", "baseline")

    def diff(self) -> str:
        self._add_everything()
        return self._git("diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "HEAD")


def diff_stats(patch: str) -> tuple[int, int]:
    """Lines added and removed by a git diff (counted inside hunks only)."""
    added = removed = 0
    in_hunk = False
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    return added, removed


def apply_patch(patch: str, target: Path) -> None:
    """Applies a patch made by `Baseline.diff` to a copy of the same starting tree."""
    if not patch.strip():
        return
    done = subprocess.run(
        ["git", "apply", "--binary", "--whitespace=nowarn", "-"],
        cwd=target,
        input=patch,
        capture_output=True,
        text=True,
        env={
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CEILING_DIRECTORIES": str(target.parent),  # never find an enclosing repo
            "HOME": str(target),
            "PATH": "/usr/bin:/bin",
        },
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise BaselineError(f"git apply failed: {lines[-1] if lines else '?'}")
