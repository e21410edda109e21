"""The agent's change as text: split a git patch by file, and keep what grading may apply.

Pure functions over the patch text a sandbox's `diff` produced (`git diff --binary
--no-renames`: octal-escaped paths, no renames or copies). A section whose extended
header holds a line that diff never writes (`rename from/to`, `copy from/to`,
`similarity index`, a mode change other than the executable bit, anything unknown), or
whose `---`/`+++` lines name another file than its `diff --git` line, is refused: `git
apply` honours those lines, while everything here judges a section by its header's path.
Grading applies only what `grading_change` keeps:

- a file under a protected pattern (test files, test configuration), a hidden
  test, or a folder above one of them, is dropped: those come from the task;
- a symbolic link whose target is absolute or climbs out of the workspace is
  dropped: the grading sandbox's view of the file system is not the agent's,
  so such a link can only point at something other than what the agent saw;
- everything else is kept, links inside the workspace included (they are
  applied, and later followed, only inside the grading sandbox).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class PatchFormatError(ValueError):
    """Not a patch `Sandbox.diff` could have written."""


@dataclass(frozen=True)
class FileChange:
    path: str  # workspace-relative, as git names it
    text: str  # the whole section, from its `diff --git` line
    new_mode: str | None  # e.g. "120000" for a symbolic link, "100644" for a file
    deleted: bool

    @property
    def link_target(self) -> str | None:
        """For a link the change creates or rewrites, where it points."""
        if self.new_mode != "120000" or self.deleted:
            return None
        added = [line[1:] for line in self.text.splitlines() if line.startswith("+") and
                 not line.startswith("+++")]  # fmt: skip
        return added[0] if added else None


@dataclass(frozen=True)
class GradingChange:
    patch: str
    dropped_protected: list[str] = field(default_factory=list)
    dropped_links: list[str] = field(default_factory=list)


def unquote(name: str) -> str:
    """A path as git wrote it: plain, or C-quoted with octal escapes for unusual bytes."""
    if not name.startswith('"'):
        return name
    if len(name) < 2 or not name.endswith('"'):
        raise PatchFormatError(f"bad quoted path {name!r}")
    out = bytearray()
    body, index = name[1:-1], 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out += char.encode("utf-8", "surrogateescape")
            index += 1
        elif body[index + 1 : index + 2] in _ESCAPES:
            out.append(_ESCAPES[body[index + 1]])
            index += 2
        elif re.fullmatch(r"[0-7]{3}", body[index + 1 : index + 4]):
            out.append(int(body[index + 1 : index + 4], 8))
            index += 4
        else:
            raise PatchFormatError(f"bad escape in path {name!r}")
    return out.decode("utf-8", "surrogateescape")


def _header_path(header: str) -> str:
    """The path of `diff --git a/P b/P` (no renames, so both sides name the same file)."""
    rest = header.removeprefix("diff --git ")
    if rest.startswith('"'):
        match = re.fullmatch(r'("(?:[^"\\]|\\.)*") ("(?:[^"\\]|\\.)*")', rest)
        if match is None:
            raise PatchFormatError(f"unreadable header {header!r}")
        old, new = unquote(match.group(1)), unquote(match.group(2))
    else:
        half = (len(rest) - 1) // 2
        old, new = rest[:half], rest[half + 1 :]
    if not (old.startswith("a/") and new.startswith("b/") and old[2:] == new[2:]):
        raise PatchFormatError(f"unreadable header {header!r}")
    return old[2:]


FILE_MODES = r"(?:100644|100755|120000|160000)"  # file, executable, link, nested repository
_HEADER_LINES = [
    re.compile(rf"(?:new|deleted) file mode {FILE_MODES}"),
    re.compile(r"(?:old|new) mode 100(?:644|755)"),  # the executable bit only
    re.compile(rf"index [0-9a-f]{{1,64}}\.\.[0-9a-f]{{1,64}}(?: {FILE_MODES})?"),
]
_BODY_START = ("--- ", "+++ ", "@@", "GIT binary patch", "Binary files ", "+", "-", " ", "\\")


def _check_header(section: str, path: str) -> None:
    """Refuses a section whose header `git diff --binary --no-renames` could not have written."""
    lines = section.split("\n")[1:]
    for index, line in enumerate(lines):
        if line.startswith(_BODY_START) or (not line and index == len(lines) - 1):
            break
        if not any(pattern.fullmatch(line) for pattern in _HEADER_LINES):
            raise PatchFormatError(
                f"{path}: a header line the harness's diff never writes: {line[:80]!r}"
            )
    for line in lines:
        if line.startswith(("--- ", "+++ ")):
            name = line[4:].removesuffix("\t")  # git ends a name holding a space with a tab
            side = "a/" if line.startswith("-") else "b/"
            if name != "/dev/null" and unquote(name) != side + path:
                raise PatchFormatError(f"{path}: {line[:80]!r} names another file")
        elif line.startswith("@@") or line.startswith("GIT binary patch"):
            break


def split_patch(patch: str) -> list[FileChange]:
    if not patch.strip():
        return []
    sections = re.split(r"(?m)^(?=diff --git )", patch)
    if sections[0].strip():
        raise PatchFormatError("text before the first `diff --git` line")
    changes = []
    for section in sections[1:]:
        header = section.split("\n", 1)[0]
        mode, deleted = None, False
        for line in section.split("\n")[1:6]:
            if line.startswith(("new file mode ", "new mode ")):
                mode = line.rsplit(" ", 1)[1]
            elif line.startswith("deleted file mode "):
                deleted = True
            elif line.startswith("index ") and mode is None and len(line.split()) == 3:
                mode = line.split()[2]
        path = _header_path(header)
        _check_header(section, path)
        changes.append(FileChange(path, section, mode, deleted))
    return changes


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob with `**` (any number of folders), `*` and `?` (within one name)."""
    out, index = "", 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out, index = out + "(?:.*/)?", index + 3
        elif pattern.startswith("**", index):
            out, index = out + ".*", index + 2
        elif pattern[index] == "*":
            out, index = out + "[^/]*", index + 1
        elif pattern[index] == "?":
            out, index = out + "[^/]", index + 1
        else:
            out, index = out + re.escape(pattern[index]), index + 1
    return re.compile(out, re.DOTALL)


def is_protected(path: str, patterns: list[str], protected_files: set[str]) -> bool:
    """A path is protected if it, or a folder above it, matches a pattern or is a protected
    file, or if a protected file lies below it (replacing a folder replaces its contents)."""
    regexes = [glob_regex(pattern) for pattern in patterns]
    parts = path.split("/")
    for end in range(1, len(parts) + 1):
        prefix = "/".join(parts[:end])
        if prefix in protected_files or any(regex.fullmatch(prefix) for regex in regexes):
            return True
        if any(regex.fullmatch(prefix + "/") for regex in regexes):
            return True
    return any(name.startswith(path + "/") for name in protected_files)


def link_leaves_workspace(path: str, target: str) -> bool:
    if target.startswith("/"):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return joined == ".." or joined.startswith("../")


def grading_change(patch: str, patterns: list[str], protected_files: set[str]) -> GradingChange:
    """The part of the agent's patch that grading applies (see the module docstring)."""
    kept: list[str] = []
    protected: list[str] = []
    links: list[str] = []
    for change in split_patch(patch):
        target = change.link_target
        if is_protected(change.path, patterns, protected_files):
            protected.append(change.path)
        elif target is not None and link_leaves_workspace(change.path, target):
            links.append(change.path)
        else:
            kept.append(change.text)
    return GradingChange("".join(kept), protected, links)
