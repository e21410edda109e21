"""What a sandbox can read: one allow-list, shown by both backends, walked by the leak scan.

A sandboxed command's root is made of exactly:
- system files: those of a few Debian packages the agent's shell, git and the harness need
  (`PACKAGES`: `bash`, `coreutils`, `git`, `grep`, `sed`, `findutils`, ...) without docs,
  manuals or translations; the two programs a bubblewrap command starts through
  (`setpriv`, `prlimit`); every shared library these and the Python environment load
  (found with `ldd`); a minimal `/etc` (the loader's configuration, `nsswitch.conf`,
  `localtime`, the `alternatives` of programs shown, and a `passwd`/`group` holding only
  root, the grading user and `nobody`);
- the Python environment: the running interpreter's virtual environment and its base
  installation, without the base's own `site-packages`, its test suite and the large
  distributions only the harness itself uses outside any sandbox (`LEFT_OUT`).
Nothing else of the host: no `/usr/lib/python3/dist-packages`, no package vendoring its
own copies under `/usr/lib/<name>`, no `/usr/share`, `/usr/local`, `/opt`, `/srv` or home
folders.

Bubblewrap binds a tree of copies of the system files (`system_tree`, built once per
`view_key` in the build cache) over `/usr` and `/etc`, and the Python folders with what is
left out covered; the Docker image (`image.py`) holds the same files. `scan_roots` is what
the leak scan walks: the same tree and the same Python folders, the hidden paths left out.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from harness.home import build_cache, build_once
from harness.sandbox.protocol import SandboxUnavailable
from harness.sandbox.pythons import python_paths

VIEW_VERSION = "5"  # bump when what goes in changes
PACKAGES = (
    "bash", "dash", "coreutils", "findutils", "grep", "sed", "mawk", "diffutils", "git",
    "tar", "gzip", "procps", "libc-bin", "debianutils", "sensible-utils",
    "tzdata", "libfaketime",  # time zones, and the shifted clock of validation and health
    "gettext",  # msgfmt, xgettext, msgmerge: humanize's translation tests (v1) run them
    "make",  # markdown-makefile-devops (v1) runs its Makefile
)  # fmt: skip
# Of util-linux, whose rest (mount, nsenter, ...) stays out: what scripts and tests use.
PROGRAMS = (
    "/usr/bin/setpriv", "/usr/bin/prlimit", "/usr/bin/setsid", "/usr/bin/flock",
    "/usr/bin/getopt", "/usr/bin/taskset", "/usr/bin/ipcs", "/usr/bin/ipcmk", "/usr/bin/ipcrm",
)  # fmt: skip
ALTERNATIVES = ("awk",)  # shown whichever program the host chose for them (mawk, gawk)
SKIPPED_PREFIXES = (
    "/usr/share/doc", "/usr/share/man", "/usr/share/info", "/usr/share/locale",
    "/usr/share/lintian", "/usr/share/bash-completion", "/usr/share/gitweb",
)  # fmt: skip
SKIPPED_PYTHON = (
    "site-packages", "test", "idlelib", "tkinter", "ensurepip", "turtledemo",
    "config-3.11-x86_64-linux-gnu",
)  # fmt: skip
# Distributions of the harness's environment that no sandboxed command needs (training,
# Ray, the dashboard and export, browser tests, the type checker): their top-level files
# and folders are not shown. The suite's test dependencies (pyproject's `suite` extra),
# pytest and its plugins are.
LEFT_OUT = (
    "torch", "ray", "pyarrow", "playwright", "pandas", "plotly", "sympy", "mpmath", "mypy",
    "networkx", "tokenizers", "safetensors", "hf-xet", "huggingface-hub",
)  # fmt: skip
MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/nsswitch.conf", "/etc/ld.so.conf", "/etc/ld.so.cache", "/etc/localtime")
ETC_FOLDERS = ("/etc/ld.so.conf.d", "/etc/alternatives")
SCRATCH = ("/tmp", "/var")  # a sandbox has a tmpfs of its own at /tmp and /var/tmp
GRADER_UID = 65533
PASSWD = (
    "root:x:0:0:root:/root:/bin/sh\n"
    f"cbgrader:x:{GRADER_UID}:{GRADER_UID}:grader:/tmp:/usr/sbin/nologin\n"
    "nobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n"
)
GROUP = f"root:x:0:\ncbgrader:x:{GRADER_UID}:\nnogroup:x:65534:\n"
WRITTEN = {"/etc/passwd": PASSWD, "/etc/group": GROUP}  # the view's own, never the host's
DPKG_STATUS = Path("/var/lib/dpkg/status")
READY = ".ready"
LEFT_OUT_FILE = ".left-out"  # python_left_out() of the view_key, one path a line
SHARED_TREES = "/var/cache/cursorbench-view"


def _package_files(packages: Iterable[str]) -> list[str]:
    try:
        done = subprocess.run(["dpkg", "-L", *packages], capture_output=True, text=True)
    except OSError as error:
        raise SandboxUnavailable(f"cannot list Debian packages for the sandbox: {error}") from None
    if done.returncode != 0 and not done.stdout:
        raise SandboxUnavailable(f"cannot list Debian packages for the sandbox: {done.stderr}")
    return [
        line
        for line in done.stdout.splitlines()
        if line.startswith("/") and not line.startswith(SKIPPED_PREFIXES)
    ]


@functools.cache
def _left_out() -> dict[Path, set[str]]:
    """Per site-packages folder, the top-level names only `LEFT_OUT` distributions use (a
    name another distribution also has files under, a shared namespace, stays in)."""
    by_folder: dict[Path, tuple[set[str], set[str]]] = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        folder = Path(str(dist.locate_file(""))).resolve()
        tops = {f.parts[0] for f in dist.files or () if f.parts and f.parts[0] != ".."}
        dropped, kept = by_folder.setdefault(folder, (set(), set()))
        (dropped if name in LEFT_OUT else kept).update(tops)
    return {folder: dropped - kept for folder, (dropped, kept) in by_folder.items()}


def _base_lib() -> Path | None:
    """The base interpreter's standard library folder (`lib/python3.X`), when it has one."""
    stdlib = Path(sysconfig.get_paths(vars={"base": sys.base_prefix})["stdlib"])
    return stdlib.resolve() if stdlib.is_dir() else None


@functools.cache
def python_left_out() -> tuple[Path, ...]:
    """What of the Python folders is not shown: `LEFT_OUT` distributions, and the base
    interpreter's own site-packages and test suite (`SKIPPED_PYTHON`). Read from the system
    tree of this `view_key` when it is built (listing every distribution's files takes ~1 s)."""
    saved = trees_folder() / view_key() / LEFT_OUT_FILE
    if saved.is_file():
        return tuple(Path(line) for line in saved.read_text().splitlines() if line)
    return _python_left_out()


def _python_left_out() -> tuple[Path, ...]:
    found: list[Path] = []
    for folder, names in _left_out().items():
        found += [folder / name for name in sorted(names) if (folder / name).exists()]
    base = _base_lib()
    if base is not None and Path(sys.prefix).resolve() != Path(sys.base_prefix).resolve():
        found += [base / name for name in SKIPPED_PYTHON if (base / name).exists()]
    return tuple(found)


@functools.cache
def env_left_out() -> tuple[Path, ...]:
    """What of the Python folders is not shown beside a task's environment: the base
    interpreter's own site-packages and test suite (`SKIPPED_PYTHON`). The harness's venv
    is not shown at all, so none of its distributions need leaving out."""
    base = _base_lib()
    return tuple(base / name for name in SKIPPED_PYTHON if base and (base / name).exists())


def python_roots(python_env: Path | None = None) -> list[Path]:
    """The Python folders, none inside another (the base's `bin` is inside the base)."""
    paths = sorted(dict.fromkeys(path.resolve() for path in python_paths(python_env)))
    return [p for p in paths if not any(q in p.parents for q in paths)]


def _python_files() -> Iterator[str]:
    """Every path the Python view shows (folders, files, links), `python_left_out` not."""
    left_out = set(python_left_out())
    for root in python_roots():
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath)
            dirnames[:] = [d for d in dirnames if here / d not in left_out]
            yield dirpath
            for name in [*filenames, *(d for d in dirnames if (here / d).is_symlink())]:
                if here / name not in left_out:
                    yield str(here / name)


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(4) == b"\x7fELF"
    except OSError:
        return False


def _libraries(paths: Iterable[str]) -> set[str]:
    """Shared libraries the ELF files among `paths` load (with the loader), as paths."""
    elves = [p for p in paths if os.path.isfile(p) and not os.path.islink(p) and _is_elf(p)]
    found: set[str] = set()
    for start in range(0, len(elves), 200):
        done = subprocess.run(["ldd", *elves[start : start + 200]], capture_output=True, text=True)
        for match in re.finditer(r"(/\S+) \(0x", done.stdout):
            found.add(match[1])
    return found


def _canonical(path: str) -> str:
    """`path` with its folders' links resolved (`/bin/bash` is `/usr/bin/bash` on merged /usr),
    the last part kept as it is."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _with_link_targets(paths: Iterable[str]) -> set[str]:
    """The paths plus whatever their links resolve to, and each folder above them."""
    every: set[str] = set()
    for path in map(_canonical, paths):
        every.add(path)
        if os.path.islink(path):
            every.add(os.path.realpath(path))
    for path in list(every):
        parent = os.path.dirname(path)
        while parent not in every and parent != "/":
            every.add(parent)
            parent = os.path.dirname(parent)
    return every


@functools.cache
def system_inputs() -> tuple[str, ...]:
    """The system files chosen by name (packages, programs, /etc), libraries not yet."""
    packages = _package_files(PACKAGES)
    programs = [p for p in PROGRAMS if os.path.exists(p)]
    etc = [p for p in ETC_FILES if os.path.exists(p)]
    wanted = {os.path.realpath(p) for p in [*packages, *programs]}
    chosen: set[str] = set()
    for folder in ETC_FOLDERS:  # alternatives only for programs that are shown
        if os.path.isdir(folder):
            entries = [str(p) for p in Path(folder).iterdir()]
            chosen.update(p for p in entries if os.path.realpath(p) in wanted)
            chosen.update(f"{folder}/{name}" for name in ALTERNATIVES)
            etc += [folder]
    chosen = {path for path in chosen if os.path.exists(path)}
    targets = [os.path.realpath(path) for path in sorted(chosen)]
    return tuple(
        [*packages, *programs, *etc, *sorted(chosen), *targets, *_alternative_links(chosen)]
    )


def _alternative_links(chosen: set[str]) -> list[str]:
    """The program links made by `update-alternatives` (`/usr/bin/awk` ->
    `/etc/alternatives/awk`) for the alternatives shown: no package lists them."""
    found = []
    for folder in ("/usr/bin", "/usr/sbin"):
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_symlink() and os.readlink(entry.path) in chosen:
                    found.append(entry.path)
    return sorted(found)


def _in_python(path: str, roots: Sequence[str]) -> bool:
    """Inside a Python folder, or above one (bubblewrap makes the folders above itself)."""
    return any(
        path == root or path.startswith(root + "/") or root.startswith(path + "/") for root in roots
    )


def _under_scratch(path: str) -> bool:
    """Under /tmp or /var: caches and state (`/var/lib/git`), nothing a command needs."""
    return any(path == folder or path.startswith(folder + "/") for folder in SCRATCH)


@functools.cache
def system_paths() -> tuple[str, ...]:
    """Every system path of the view, sorted (folders before their contents): not those
    inside the Python folders, nor under the scratch folders, nor the view's own files."""
    inputs = system_inputs()
    python = list(_python_files())
    merged = [p for p in MERGED_USR if os.path.islink(p)]
    every = _with_link_targets([*inputs, *_libraries([*inputs, *python])]) | set(merged)
    roots = [str(path) for path in python_roots()]
    return tuple(
        sorted(
            p
            for p in every
            if os.path.lexists(p)
            and not _in_python(p, roots)
            and not _under_scratch(p)
            and p not in WRITTEN
        )
    )


def python_files() -> tuple[str, ...]:
    """Every path of the Python view (what the Docker image holds of the environment)."""
    return tuple(_python_files())


def _stat_line(path: Path) -> str:
    try:
        info = path.stat()
    except OSError:
        return f"{path}\0missing"
    return f"{path}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}"


def _site_folders() -> list[Path]:
    """The environment's site-packages folders (installing a distribution changes them)."""
    found: set[Path] = set()
    for prefix in (sys.prefix, sys.base_prefix):
        paths = sysconfig.get_paths(vars={"base": prefix, "platbase": prefix})
        found.update(Path(paths[key]) for key in ("purelib", "platlib"))
    return sorted(path for path in found if path.is_dir())


@functools.cache
def view_key() -> str:
    """A cheap key of what the system tree is made of: the dpkg database, the programs and
    /etc files chosen, the interpreter, and the Python folders (installing or removing a
    distribution changes its site-packages folder, whose libraries the tree holds)."""
    digest = hashlib.sha256(f"{VIEW_VERSION}\0{PACKAGES}\0{PROGRAMS}\0{PASSWD}\0{GROUP}".encode())
    paths = [
        DPKG_STATUS,
        Path(sys.executable).resolve(),
        *map(Path, PROGRAMS),
        *map(Path, ETC_FILES),
        *map(Path, ETC_FOLDERS),
        *python_paths(),
        *_site_folders(),
    ]
    for path in paths:
        digest.update(_stat_line(path).encode() + b"\n")
    return digest.hexdigest()[:16]


def _copy_path(path: str, target: Path) -> None:
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        target.mkdir(parents=True, exist_ok=True)
        os.chmod(target, (stat.S_IMODE(info.st_mode) | 0o755) & ~0o022)
    elif stat.S_ISLNK(info.st_mode):
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.readlink(path), target)
    elif stat.S_ISREG(info.st_mode):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        os.chmod(target, stat.S_IMODE(info.st_mode) & ~0o7022)  # no setuid, nothing writable


def _build_tree(staging: Path) -> None:
    staging.mkdir(parents=True)
    for path in system_paths():
        _copy_path(path, staging / path.lstrip("/"))
    (staging / LEFT_OUT_FILE).write_text("".join(f"{p}\n" for p in _python_left_out()))
    for path, text in WRITTEN.items():
        target = staging / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        os.chmod(target, 0o644)
    os.chmod(staging, 0o755)


def trees_folder() -> Path:
    """Where system trees are kept: `$CURSORBENCH_VIEW_ROOT`, else `/var/cache/cursorbench-view`
    where it can be made (root), else the build cache. A bind mount's source path shows in the
    sandbox's mount table: one under `/var/cache` says nothing of the host's homes or caches."""
    chosen = os.environ.get("CURSORBENCH_VIEW_ROOT")
    if chosen:
        return Path(chosen)
    shared = Path(SHARED_TREES)
    try:
        shared.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError:
        return build_cache() / "sandbox-root"
    return shared if os.access(shared, os.W_OK) else build_cache() / "sandbox-root"


# A tree no process has opened for this long is removed when another is opened: each
# change of the Python environment or the packages makes a new one (~120 MB).
UNUSED_TREE_S = 7 * 24 * 3600
# Opening a tree marks it used (its marker's time) only when the mark is older than this:
# the marker lies in what the leak scan walks, and a mark by every process that opens the
# tree (each test worker, CLI and factory job) changed the scan's environment fingerprint
# each time, so its cache (`cursorbench.validation.leaks`) was stale and every build grepped again.
MARK_EVERY_S = 3600


@functools.cache
def system_tree() -> Path:
    """The system files as a tree of copies, built once per `view_key` (about 70 MB here);
    bubblewrap binds its top folders over the host's. Opening it marks it used (its marker's
    time, at most every `MARK_EVERY_S`) and removes trees of other keys unused for
    `UNUSED_TREE_S`."""
    root = trees_folder() / view_key()
    try:
        build_once(root, view_key(), _build_tree, marker=READY)
        mark_used(root / READY)
    except OSError as error:
        raise SandboxUnavailable(f"cannot build the sandbox's system tree: {error}") from None
    prune_trees(root.parent, keep=root.name)
    return root


def mark_used(marker: Path, every_s: float = MARK_EVERY_S) -> bool:
    """Sets the marker's time to now if it is older than `every_s`; whether it did."""
    if time.time() - marker.stat().st_mtime <= every_s:
        return False
    os.utime(marker)
    return True


def prune_trees(folder: Path, keep: str, unused_s: float = UNUSED_TREE_S) -> list[str]:
    """Removes the built trees in `folder` but `keep` whose marker is older than `unused_s`
    (a tree still being built has no marker and is left alone); returns their names."""
    removed = []
    now = time.time()
    for tree in sorted(folder.iterdir()) if folder.is_dir() else []:
        marker = tree / READY
        try:
            stale = tree.name != keep and now - marker.stat().st_mtime > unused_s
        except OSError:
            continue
        if stale and tree.is_dir() and not tree.is_symlink():
            shutil.rmtree(tree, ignore_errors=True)
            removed.append(tree.name)
    return removed


def tree_tops(tree: Path) -> list[tuple[str, str | None]]:
    """The tree's top-level entries as (name inside, link target or None for a folder)."""
    found: list[tuple[str, str | None]] = []
    for entry in sorted(tree.iterdir()):
        if entry.name == READY:
            continue
        if entry.is_symlink():
            found.append((f"/{entry.name}", os.readlink(entry)))
        elif entry.is_dir():
            found.append((f"/{entry.name}", None))
    return found


def _visible(root: Path, hidden: set[Path], above: set[Path]) -> list[Path]:
    """`root`, or its parts not covered by a hidden path (`above`: the folders above one)."""
    if root in hidden or any(parent in hidden for parent in root.parents):
        return []
    if root not in above or not root.is_dir() or root.is_symlink():
        return [root]
    return [part for child in sorted(root.iterdir()) for part in _visible(child, hidden, above)]


def under_any(roots: Iterable[Path]) -> Callable[[str], bool]:
    """Whether a path is one of `roots` or inside one: a set lookup per ancestor, so checking
    every file of a view against hundreds of roots stays linear."""
    index = {str(root) for root in roots}

    def inside(path: str) -> bool:
        while path not in index:
            parent = os.path.dirname(path)
            if parent == path:
                return False
            path = parent
        return True

    return inside


def scan_roots(hidden: Sequence[Path] = (), python_env: Path | None = None) -> list[Path]:
    """Every host path a sandbox can read but the workspace: the system tree, and the
    Python folders less what is left out and what `hidden` covers. With a task's environment
    (`python_env`), its folders instead: a hidden path covers only what is inside them, as
    bubblewrap and Docker cover it (the environment itself lies in the hidden build cache)."""
    if python_env is None:
        covered = {path.resolve() for path in [*hidden, *python_left_out()]}
    else:
        shown = python_roots(python_env)
        inside = [p.resolve() for p in hidden if any(r in p.resolve().parents for r in shown)]
        covered = {*inside, *env_left_out()}
    above = {parent for path in covered for parent in path.parents}
    roots: list[Path] = [system_tree()]
    for root in python_roots(python_env):
        roots += _visible(root, covered, above)
    return roots
