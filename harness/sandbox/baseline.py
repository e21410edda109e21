"""A private git repository that remembers a workspace's starting state.

`Baseline.snapshot` runs on the host, once, over a fresh copy of a trusted
tree (before any agent command). The diff of an agent's tree is taken inside
the sandbox (`diff_command`): the baseline is mounted read-only, new objects
and the index go to the sandbox's private /tmp, so nothing the agent wrote is
read by a host-side process. `Baseline.diff` is for trusted trees only (the
task builder's reference patch). git runs with hooks, fsmonitor, user and
system config disabled, so nothing planted in a workspace is executed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_CONFIG = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.autocrlf": "false",
    "core.quotePath": "true",  # octal-escape unusual bytes in paths: headers stay ASCII
    "safe.directory": "*",
    "user.name": "cursorbench",
    "user.email": "cursorbench@localhost",
    "commit.gpgSign": "false",
    "diff.renames": "false",
}
DIFF_OPTIONS = ("--binary", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv")

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
        argv = ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}", *args]
        env = git_env(home=str(self.git_dir))
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
        return self._git("diff", "--cached", *DIFF_OPTIONS, "HEAD")


def git_env(home: str) -> dict[str, str]:
    """git with no system or user configuration, and ours given through the environment."""
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "HOME": home,
        "PATH": "/usr/bin:/bin",
        "GIT_CONFIG_COUNT": str(len(GIT_CONFIG)),
    }
    for index, (key, value) in enumerate(GIT_CONFIG.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


# Runs inside the sandbox with the variables of `diff_env`: the baseline's index is copied
# to private scratch, git adds the agent's tree against it (new objects go to scratch too,
# the baseline's own are read through alternates), then prints the patch.
DIFF_SCRIPT = """set -e
cp --preserve=timestamps "$GIT_DIR/index" "$GIT_INDEX_FILE"
mkdir -p "$GIT_OBJECT_DIRECTORY"
git add -A --force -- . "$@"
exec git diff --cached {options} HEAD
""".format(options=" ".join(DIFF_OPTIONS))


def diff_command() -> list[str]:
    excluded = [f":(exclude,glob){pattern}" for pattern in NOT_CHANGES]
    return ["sh", "-c", DIFF_SCRIPT, "sh", *excluded]


def diff_env(*, git_dir: str, work_tree: str, scratch: str) -> dict[str, str]:
    env = git_env(home=scratch)
    env |= {
        "GIT_DIR": git_dir,
        "GIT_WORK_TREE": work_tree,
        "GIT_INDEX_FILE": f"{scratch}/.cursorbench-index",
        "GIT_OBJECT_DIRECTORY": f"{scratch}/.cursorbench-objects",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": f"{git_dir}/objects",
        "LC_ALL": "C",
    }
    return env


def apply_command() -> list[str]:
    """`git apply` of the patch on stdin to the current folder (no repository needed)."""
    return ["git", "apply", "--binary", "--whitespace=nowarn", "-"]


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
