"""The leak scan: after a build, nothing the agent can read may hold the answer.

Two checks over a built task:
  1. Structure of the workspace: no `.git` (the harness keeps its baseline outside the
     workspace, so the workspace has no repository at all: no history, tags, reflog or
     remotes), no `__pycache__`/bytecode, type-checker or test caches, egg-info, build or
     dist folders, or archives.
  2. Content: the *distinctive* lines of the answer (lines the reference solution adds and
     the hidden tests' lines, at least `MIN_CHARS` long once stripped, that appear
     nowhere in the mutated workspace) must not appear in any file the agent can read:
     the workspace (git objects and gzip/zip members are expanded first) and the Python
     environment the sandbox shows (`python_paths()` minus hidden paths, plus Debian's
     `/usr/lib/python3*` and `/usr/local/lib/python3*`). A file holding at least
     `MIN_HITS` distinct distinctive lines (all of them, when there are fewer) is a leak.

Not covered: the rest of `/usr` and `/etc` (no Python code lives there on the machines
we know); pack files of a `.git` (any `.git` is refused by check 1 anyway).

Grepping the environment (gigabytes, ~30 s) is most of a build, so its result is cached in
the build cache (hidden from the agent, outside the scanned roots), keyed by the patterns,
the roots and a fingerprint of every entry under them (type, inode, size, mtime, ctime and
path, listed by `find`, ~0.5 s): adding, changing or replacing any file in the environment
makes the next scan grep again. Binary files are still grepped (`-a`): nothing is skipped.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import subprocess
import tempfile
import uuid
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cursorbench.sources import dropped
from harness.home import build_cache
from harness.sandbox.bubblewrap import python_paths

MIN_CHARS = 30
MIN_HITS = 3
SYSTEM_PYTHON_GLOBS = ("/usr/lib/python3*", "/usr/local/lib/python3*")
GREP_ARGS = ("grep", "-rFoa", "-Z", "--no-messages")
SCAN_CACHE_VERSION = "1"  # bump when what a cached result means changes


@dataclass(frozen=True)
class Leak:
    where: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}: {self.why}"


def distinctive_lines(answer: Iterable[str], workspace: Path) -> list[str]:
    """Answer lines long and rare enough that finding them means finding the answer."""
    present: set[str] = set()
    for path in _files(workspace):
        text = path.read_text(encoding="utf-8", errors="replace")
        present.update(line.strip() for line in text.splitlines())
    lines = {line.strip() for line in answer}
    return sorted(line for line in lines if len(line) >= MIN_CHARS and line not in present)


def answer_lines(reference_patch: str, hidden: Path) -> list[str]:
    """Lines the reference adds, and every line of the hidden tests."""
    added = [
        line[1:]
        for line in reference_patch.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    for path in _files(hidden):
        added += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return added


def structure_leaks(workspace: Path) -> list[Leak]:
    leaks = []
    for dirpath, dirnames, filenames in os.walk(workspace):
        for name in [*dirnames, *filenames]:
            if dropped(name):
                where = str((Path(dirpath) / name).relative_to(workspace))
                leaks.append(Leak(f"workspace/{where}", "not allowed in a workspace"))
        dirnames[:] = [d for d in dirnames if not dropped(d)]
    return leaks


def workspace_leaks(workspace: Path, patterns: Sequence[str]) -> list[Leak]:
    """Content leaks in the workspace, archives and git objects expanded."""
    leaks = []
    for path in _files(workspace, skip_dropped=False):
        for label, data in _expanded(path):
            found = _count(data, patterns)
            if found >= _needed(patterns):
                where = f"workspace/{path.relative_to(workspace)}{label}"
                leaks.append(Leak(where, f"holds {found} distinctive lines of the answer"))
    return leaks


def environment_roots(hidden: Sequence[Path]) -> list[Path]:
    """What of the Python environment the sandbox shows, hidden paths left out."""
    roots = [*python_paths()]
    for pattern in SYSTEM_PYTHON_GLOBS:
        roots += sorted(Path("/").glob(pattern.lstrip("/")))
    hidden_resolved = [path.resolve() for path in hidden]
    shown: list[Path] = []
    for root in dict.fromkeys(path.resolve() for path in roots if path.exists()):
        shown += _visible(root, hidden_resolved)
    return shown


def _visible(root: Path, hidden: list[Path]) -> list[Path]:
    if any(root == h or h in root.parents for h in hidden):
        return []
    if not any(root in h.parents for h in hidden) or not root.is_dir():
        return [root]
    return [part for child in sorted(root.iterdir()) for part in _visible(child, hidden)]


def environment_leaks(
    patterns: Sequence[str], roots: Sequence[Path], cache: Path | None = None
) -> list[Leak]:
    """Content leaks in folders outside the workspace, found with `grep -F` (fast); with a
    cache folder, a scan of the same patterns over an unchanged environment is not redone."""
    if not patterns or not roots:
        return []
    entry = cache / f"{_scan_key(patterns, roots)}.json" if cache is not None else None
    if entry is not None and entry.is_file():
        return [Leak(where, why) for where, why in json.loads(entry.read_text())]
    leaks = _grep_leaks(patterns, roots)
    if entry is not None:
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = entry.with_name(f"{entry.name}.{uuid.uuid4().hex[:8]}.tmp")
        staging.write_text(json.dumps([[leak.where, leak.why] for leak in leaks]))
        os.replace(staging, entry)  # atomic: two builds may write the same result
    return leaks


def environment_fingerprint(roots: Sequence[Path]) -> str:
    """A digest of every entry under the roots: changes when any file is added, removed,
    renamed, rewritten or replaced (the inode and ctime change even when mtime is kept)."""
    argv = ["find", *map(str, roots), "-printf", "%y %i %s %T@ %C@ %p\\0"]
    done = subprocess.run(argv, capture_output=True, timeout=300)
    problems = [
        line
        for line in done.stderr.decode(errors="replace").splitlines()
        if not line.endswith("No such file or directory")  # gone while listed (a .pyc's temp)
    ]
    if done.returncode != 0 and (problems or not done.stderr):
        raise RuntimeError(f"leak scan: find failed ({' '.join(problems)[:200]})")
    return hashlib.sha256(done.stdout).hexdigest()


def _scan_key(patterns: Sequence[str], roots: Sequence[Path]) -> str:
    digest = hashlib.sha256(f"{SCAN_CACHE_VERSION} {MIN_HITS} {' '.join(GREP_ARGS)}".encode())
    for part in [*patterns, "", *map(str, roots), ""]:
        digest.update(part.encode() + b"\0")
    digest.update(environment_fingerprint(roots).encode())
    return digest.hexdigest()[:32]


def _grep_leaks(patterns: Sequence[str], roots: Sequence[Path]) -> list[Leak]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as listing:
        listing.write("\n".join(patterns) + "\n")
        listing.flush()
        argv = [*GREP_ARGS, "-f", listing.name, *map(str, roots)]
        done = subprocess.run(argv, capture_output=True, timeout=900)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"leak scan: grep failed ({done.stderr.decode()[:200]})")
    found: dict[str, set[bytes]] = {}
    for line in done.stdout.split(b"\n"):
        name, sep, match = line.partition(b"\0")
        if sep:
            found.setdefault(name.decode(errors="replace"), set()).add(match)
    needed = _needed(patterns)
    return [
        Leak(name, f"holds {len(matches)} distinctive lines of the answer")
        for name, matches in sorted(found.items())
        if len(matches) >= needed
    ]


def scan(
    workspace: Path,
    reference_patch: str,
    hidden: Path,
    hidden_paths: Sequence[Path],
    cache: Path | None = None,
) -> list[Leak]:
    """Every leak of a built task; an empty list means the build may be used. The
    environment's results are cached in `cache` (default: the build cache's `leak-scan/`)."""
    patterns = distinctive_lines(answer_lines(reference_patch, hidden), workspace)
    leaks = structure_leaks(workspace)
    leaks += workspace_leaks(workspace, patterns)
    roots = environment_roots(hidden_paths)
    leaks += environment_leaks(patterns, roots, cache or build_cache() / "leak-scan")
    return leaks


def _needed(patterns: Sequence[str]) -> int:
    return max(1, min(MIN_HITS, len(patterns)))


def _count(data: bytes, patterns: Sequence[str]) -> int:
    return sum(pattern.encode() in data for pattern in patterns)


def _files(root: Path, skip_dropped: bool = True) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        if skip_dropped:
            dirnames[:] = [d for d in dirnames if not dropped(d)]
        found += [Path(dirpath) / name for name in filenames]
    return [path for path in found if path.is_file() and not path.is_symlink()]


def _expanded(path: Path) -> list[tuple[str, bytes]]:
    """The file's bytes, plus what it holds when it is compressed (git object, gz, zip)."""
    data = path.read_bytes()
    parts = [("", data)]
    if ".git" in path.parts and "objects" in path.parts:
        with contextlib.suppress(zlib.error):
            parts.append((" (git object)", zlib.decompress(data)))
    elif path.name.endswith((".gz", ".tgz")):
        with contextlib.suppress(OSError, EOFError):
            parts.append((" (gzip)", gzip.decompress(data)))
    elif zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as bundle:
            parts += [(f" ({name})", bundle.read(name)) for name in bundle.namelist()[:1000]]
    return parts
