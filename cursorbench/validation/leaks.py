"""The leak scan: after a build, nothing the agent can read may hold the answer.

Three checks over a built task:
  1. Structure of the workspace: no `.git` (the harness keeps its baseline outside the
     workspace, so the workspace has no repository at all: no history, tags, reflog or
     remotes), no `__pycache__`/bytecode, type-checker or test caches, egg-info, build or
     dist folders, or archives.
  2. Content: the *distinctive* lines of the answer (lines the reference solution adds and
     the hidden tests' lines, at least `MIN_CHARS` long once stripped, that appear
     nowhere in the mutated workspace) must not appear in any file the agent can read:
     the workspace (git objects and gzip/zip members are expanded first) and everything
     else a sandbox shows, which is the sandbox's view (`harness.sandbox.view.scan_roots`:
     the allow-listed system files and the Python environment, hidden paths left out; the
     same files on bubblewrap and Docker; a root that is only a link into a Python folder,
     such as `.venv/lib64`, is not followed into the host's whole folder). A file holding
     at least `MIN_HITS` distinct distinctive lines (all of them, when there are fewer) is
     a leak.
  3. Spec of the deleted API: no type stub (`*.pyi`) defining, and no docs page or
     changelog naming, a function or class the reference adds back that the workspace no
     longer defines (`deleted_names`), unless the task's `leak_allow` names the file with
     a reason.

Not covered: pack files of a `.git` (any `.git` is refused by check 1 anyway); a spec
that names the deleted API without its name (prose only).

Grepping the view (hundreds of MB) is most of a build, so its result is cached in the
build cache (hidden from the agent, outside the scanned roots), keyed by the patterns,
the roots and a fingerprint of every entry under them (type, inode, size, mtime, ctime and
path, listed by `find`, through a root that is a link as grep reads it): adding, changing
or replacing any file in the view makes the next scan grep again. Binary files are still
grepped (`-a`): nothing is skipped.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import tempfile
import uuid
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cursorbench.tasks.sources.sdist import dropped
from harness.home import build_cache
from harness.pyast import parse_module
from harness.sandbox.view import python_roots, scan_roots, system_tree

MIN_CHARS = 30
MIN_HITS = 3
GREP_ARGS = ("grep", "-rFoa", "-Z")
SCAN_CACHE_VERSION = "3"  # bump when what a cached result means changes
GREP_TRIES = 3
MIN_NAME = 4  # shorter deleted names (`get`, `add`) are too common to call a docs page a spec
DOC_SUFFIXES = (".rst", ".md", ".txt", ".adoc")
TEST_FOLDERS = {"tests", "test", "testing"}  # their .txt files are fixtures, not docs
CHANGELOG = re.compile(r"change|history|news|release", re.IGNORECASE)
DEFINED = re.compile(r"^[+ ]?\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)


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


def environment_roots(hidden: Sequence[Path], python_env: Path | None = None) -> list[Path]:
    """What a sandbox shows besides the workspace (its view), hidden paths left out; with a
    task's environment, that environment in place of the harness's. A root that is a link
    into a Python folder (`.venv/lib64` -> `lib`) is left out: a sandbox resolves it to what
    it shows there, which the other roots hold, while grep, which follows a link it is
    given, would read the host's whole folder (every left-out distribution too)."""
    shown = python_roots(python_env)
    return [root for root in scan_roots(hidden, python_env) if not _link_into(root, shown)]


def _link_into(root: Path, folders: Sequence[Path]) -> bool:
    """Whether `root` is a link whose target lies in one of `folders` (resolved paths)."""
    if not root.is_symlink():
        return False
    target = root.resolve()
    return any(target == folder or folder in target.parents for folder in folders)


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
    # -H: a root that is a link is listed through it, as grep reads it
    argv = ["find", "-H", *map(str, roots), "-printf", "%y %i %s %T@ %C@ %p\\0"]
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


_MISSING = re.compile(r"grep: (.+): No such file or directory")


def vanished_only(stderr: bytes) -> bool:
    """Whether every error grep reported names a file that is not there now (removed while
    it walked, or a link to nothing)."""
    lines = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    missing = [_MISSING.fullmatch(line) for line in lines]
    return bool(lines) and all(m is not None and not os.path.exists(m[1]) for m in missing)


def _grep_leaks(patterns: Sequence[str], roots: Sequence[Path]) -> list[Leak]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as listing:
        listing.write("\n".join(patterns) + "\n")
        listing.flush()
        argv = [*GREP_ARGS, "-f", listing.name, *map(str, roots)]
        # exit 2: a file could not be read, most often one that another process removed
        # while grep walked (a cache file, a temporary one): gone, it holds nothing anyone
        # can read, and the rest of the output stands; any other error is tried again,
        # and one that keeps failing fails the scan
        for _ in range(GREP_TRIES):
            done = subprocess.run(argv, capture_output=True, timeout=900)
            failed = done.returncode not in (0, 1) and not vanished_only(done.stderr)
            if not failed or done.returncode != 2:
                break
    if failed:
        why = done.stderr.decode(errors="replace")[:200] or "no message"
        raise RuntimeError(f"leak scan: grep failed (exit {done.returncode}: {why})")
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
    allow: Mapping[str, str] | None = None,
    python_env: Path | None = None,
) -> list[Leak]:
    """Every leak of a built task; an empty list means the build may be used. The
    environment's results are cached in `cache` (default: the build cache's `leak-scan/`).
    `python_env`: the task's own environment, which its sandboxes show."""
    patterns = distinctive_lines(answer_lines(reference_patch, hidden), workspace)
    leaks = structure_leaks(workspace)
    leaks += workspace_leaks(workspace, patterns)
    leaks += spec_leaks(workspace, deleted_names(reference_patch, workspace), allow or {})
    roots = environment_roots(hidden_paths, python_env)
    found = environment_leaks(patterns, roots, cache or build_cache() / "leak-scan")
    return leaks + [Leak(inside_path(leak.where), leak.why) for leak in found]


def inside_path(host: str) -> str:
    """A path of the view as a sandbox sees it (the system tree's files at `/usr/...`)."""
    tree = str(system_tree())
    return host[len(tree) :] if host.startswith(tree + "/") else host


def deleted_names(reference_patch: str, workspace: Path) -> list[str]:
    """Functions and classes the reference defines that the workspace's Python does not."""
    added = {
        match[1]
        for line in reference_patch.splitlines()
        if line.startswith("+") and not line.startswith("+++")
        for match in [DEFINED.match(line[1:])]
        if match
    }
    present: set[str] = set()
    for path in _files(workspace):
        if path.suffix == ".py":
            text = path.read_text(encoding="utf-8", errors="replace")
            present.update(DEFINED.findall(text))
    return _spec_names(added - present)


def _spec_kind(relative: Path) -> str | None:
    if any(part.endswith(".dist-info") for part in relative.parts[:-1]):
        return None  # installed package metadata (entry points): what the code must match
    if relative.suffix == ".pyi":
        return "stub"
    if relative.suffix.lower() not in DOC_SUFFIXES and relative.suffix:
        return None
    if CHANGELOG.search(relative.stem):
        return "changelog"
    if TEST_FOLDERS & set(relative.parts[:-1]) or not relative.suffix:
        return None
    return "docs page"


def spec_leaks(workspace: Path, names: Sequence[str], allow: Mapping[str, str]) -> list[Leak]:
    """Stubs defining, and docs pages or changelogs naming, a deleted function or class;
    files the task's `leak_allow` names are let through."""
    if not names:
        return []
    word = _named_as_code(names)
    leaks = []
    for path, relative, kind in _spec_files(workspace, allow):
        text = path.read_text(encoding="utf-8", errors="replace")
        if kind == "stub":
            found = sorted(set(DEFINED.findall(text)) & set(names))
        else:
            found = sorted({name for pair in word.findall(text) for name in pair if name})
        if found:
            why = (
                f"a {kind} still describes the deleted {', '.join(found[:3])} (delete it in "
                "the mutation, or name it in the task's leak_allow with why it stays)"
            )
            leaks.append(Leak(f"workspace/{relative}", why))
    return leaks


def _spec_files(workspace: Path, allow: Mapping[str, str]) -> Iterator[tuple[Path, Path, str]]:
    """The workspace's stubs, docs pages and changelogs (path, relative path, kind), less
    those the task's `leak_allow` names."""
    for path in _files(workspace):
        relative = path.relative_to(workspace)
        kind = _spec_kind(relative)
        if kind is not None and not any(fnmatch.fnmatch(str(relative), g) for g in allow):
            yield path, relative, kind


def _spec_names(names: Iterable[str]) -> list[str]:
    """The names a spec could be told by: long enough to be distinctive, not dunders."""
    return sorted(
        name
        for name in names
        if len(name) >= MIN_NAME and not (name.startswith("__") and name.endswith("__"))
    )


def _named_as_code(names: Sequence[str]) -> re.Pattern[str]:
    """`name`, name(, .name, :name (a cross-reference): named as code, not a prose word."""
    alternatives = "|".join(map(re.escape, names))
    return re.compile(rf"[.`:]({alternatives})\b|\b({alternatives})[(`]")


def removed_definitions(original: Path, workspace: Path, skip: Iterable[Path] = ()) -> list[str]:
    """Functions and classes the original's Python defines that the workspace's does not
    (the hidden tests, `skip`, left out): what a feature deletion removed."""

    def defined(root: Path) -> set[str]:
        names: set[str] = set()
        for path in _files(root):
            if path.suffix == ".py" and path.relative_to(root) not in skipped:
                names.update(DEFINED.findall(path.read_text(encoding="utf-8", errors="replace")))
        return names

    skipped = set(skip)
    return _spec_names(defined(original) - defined(workspace))


def strip_spec(workspace: Path, names: Sequence[str], allow: Mapping[str, str]) -> list[str]:
    """Deletes what still describes the deleted `names` (the feature never existed, so neither
    do its spec): their definitions in type stubs, and each paragraph of a docs page or
    changelog that names one as code. Returns the files changed; `spec_leaks` then finds
    nothing these rules cover. Files the task's `leak_allow` names are kept as they are."""
    if not names:
        return []
    word = _named_as_code(names)
    changed = []
    for path, relative, kind in _spec_files(workspace, allow):
        text = path.read_text(encoding="utf-8", errors="replace")
        stripped = _strip_stub(text, set(names)) if kind == "stub" else _strip_docs(text, word)
        if stripped != text:
            path.write_text(stripped, encoding="utf-8")
            changed.append(str(relative))
    return changed


def _strip_docs(text: str, word: re.Pattern[str]) -> str:
    """The text without its paragraphs (blocks between blank lines) that match `word`."""
    blocks = re.split(r"(\n[ \t]*\n)", text)
    # blocks[1::2] are the blank-line separators; a dropped paragraph takes the one after it
    kept: list[str] = []
    for index in range(0, len(blocks), 2):
        if not word.search(blocks[index]):
            kept.append(blocks[index])
            if index + 1 < len(blocks):
                kept.append(blocks[index + 1])
    return "".join(kept)


def _strip_stub(text: str, names: set[str]) -> str:
    """A stub without the definitions (and decorators) of `names`, at any depth; a body left
    empty gets `...`. A stub Python cannot parse goes whole: it cannot be trusted to be clean."""
    try:
        tree = parse_module(text)
    except SyntaxError:
        return ""
    drop: set[int] = set()
    placeholders: dict[int, int] = {}  # first dropped line of an emptied body -> its indent
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        doomed = [
            child
            for child in body
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and child.name in names
        ]
        starts = [min([c.lineno] + [d.lineno for d in c.decorator_list]) for c in doomed]
        for child, start in zip(doomed, starts, strict=True):
            drop.update(range(start, (child.end_lineno or child.lineno) + 1))
        if doomed and len(doomed) == len(body) and not isinstance(node, ast.Module):
            placeholders[min(starts)] = doomed[0].col_offset
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if number in placeholders:
            out.append(" " * placeholders[number] + "...\n")
        elif number not in drop:
            out.append(line)
    return "".join(out)


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
