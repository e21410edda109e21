"""The Docker backend's base image, built on this machine from what the host already has.

No image registry is reachable, so the image is made by `docker import` of a root
filesystem assembled here, small and read-only at run time:
- the files of a few Debian packages the agent's shell and the harness need (`bash`,
  `coreutils`, `git`, `tar`, `grep`, `sed`, `findutils`, `procps`, ...), without docs,
  manuals or translations;
- the harness's own Python environment at its host path (the virtual environment and
  the interpreter it was made from, without the interpreter's own site-packages and test
  suite), so the same Python and pytest run inside as under bubblewrap; without the large
  packages only the harness itself uses, outside any sandbox (`LEFT_OUT`: torch, ray,
  pyarrow, playwright, ...), which would make the image 2 GB instead of a few hundred MB;
- every shared library those programs load (found with `ldd`);
- a minimal `/etc`: `passwd`/`group` with `root`, `nobody` and the grading user, the
  loader's configuration, `nsswitch.conf`, `alternatives`; nothing else of the host's.

The image is tagged by a fingerprint of its inputs: each file's path, size, modification
time and mode, each link's target, each folder's path and mode (never a folder's times,
which change whenever anything is created in it: `/var/lib` gains the engine's data root),
and the dpkg database. So it is built once and rebuilt only when what goes in changes;
building a new one removes this repository's older tags (`prune_images`). What
it does not hold: home folders, checkouts, caches, the task sources and the harness's
own code; secrets that lie inside the Python environment are covered at run time
(`SandboxSettings.hidden`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import io
import os
import re
import stat
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from harness.sandbox.bubblewrap import python_paths
from harness.sandbox.protocol import SandboxUnavailable

if TYPE_CHECKING:
    import docker

IMAGE_REPOSITORY = "cursorbench-base"
IMAGE_VERSION = "3"  # bump when what goes in changes
PACKAGES = (
    "bash", "dash", "coreutils", "findutils", "grep", "sed", "mawk", "diffutils", "git",
    "tar", "gzip", "procps", "libc-bin", "debianutils", "sensible-utils",
)  # fmt: skip
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
# and folders stay out of the image. The suite's test dependencies (pyproject's `suite`
# extra), pytest and its plugins stay in.
LEFT_OUT = (
    "torch", "ray", "pyarrow", "playwright", "pandas", "plotly", "sympy", "mpmath", "mypy",
    "networkx", "tokenizers", "safetensors", "hf-xet", "huggingface-hub",
)  # fmt: skip
MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/nsswitch.conf", "/etc/ld.so.conf", "/etc/ld.so.cache", "/etc/localtime")
ETC_FOLDERS = ("/etc/ld.so.conf.d", "/etc/alternatives")
MOUNT_POINTS = ("/workspace", "/tmp", "/var/tmp", "/.baseline", "/.ctl", "/proc", "/sys", "/dev")
GRADER_UID = 65533
PASSWD = (
    "root:x:0:0:root:/root:/bin/sh\n"
    f"cbgrader:x:{GRADER_UID}:{GRADER_UID}:grader:/tmp:/usr/sbin/nologin\n"
    "nobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n"
)
GROUP = f"root:x:0:\ncbgrader:x:{GRADER_UID}:\nnogroup:x:65534:\n"
DPKG_STATUS = Path("/var/lib/dpkg/status")


def _package_files(packages: Iterable[str]) -> list[str]:
    done = subprocess.run(["dpkg", "-L", *packages], capture_output=True, text=True)
    if done.returncode != 0 and not done.stdout:
        raise SandboxUnavailable(f"cannot list Debian packages for the image: {done.stderr}")
    return [
        line
        for line in done.stdout.splitlines()
        if line.startswith("/") and not line.startswith(SKIPPED_PREFIXES)
    ]


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


def _python_files(skip_site: Path) -> Iterator[str]:
    """Every file of the Python environment, without the base interpreter's site-packages
    and the `LEFT_OUT` distributions."""
    left_out = _left_out()
    for root in python_paths():
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath)
            if here.name.startswith("python3") and here.is_relative_to(skip_site):
                dirnames[:] = [d for d in dirnames if d not in SKIPPED_PYTHON]
            dropped = left_out.get(here.resolve(), set())
            if dropped:
                dirnames[:] = [d for d in dirnames if d not in dropped]
                filenames = [f for f in filenames if f not in dropped]
            yield dirpath
            for name in [*filenames, *(d for d in dirnames if (here / d).is_symlink())]:
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
def _inputs() -> tuple[str, ...]:
    """What the image is made of, but the libraries (they follow from these and dpkg)."""
    base_site = Path(os.path.realpath(sys.base_prefix))
    packages = _package_files(PACKAGES)
    python = list(_python_files(base_site))
    etc = [p for p in ETC_FILES if os.path.exists(p)]
    wanted = {os.path.realpath(p) for p in packages}
    for folder in ETC_FOLDERS:  # alternatives only for programs that are in the image
        if os.path.isdir(folder):
            entries = [str(p) for p in Path(folder).iterdir()]
            etc += [folder, *(p for p in entries if os.path.realpath(p) in wanted)]
    return tuple([*packages, *python, *etc])


def rootfs_paths() -> tuple[str, ...]:
    """Every host path that goes into the image, sorted (folders before their contents)."""
    inputs = _inputs()
    merged = [p for p in MERGED_USR if os.path.islink(p)]
    every = _with_link_targets([*inputs, *_libraries(inputs)]) | set(merged)
    return tuple(sorted(p for p in every if os.path.lexists(p)))


@functools.cache
def fingerprint() -> str:
    """A hash of what the image is made of, cheap to compute (see the module docstring)."""
    return inputs_fingerprint(_inputs())


def inputs_fingerprint(paths: Iterable[str], dpkg_status: Path = DPKG_STATUS) -> str:
    """What `fingerprint` hashes, for any list of input paths: a file by its path, size,
    modification time and mode; a link by its target; a folder by its path and mode only
    (its times change whenever anything is created in it). Bytecode caches are left out."""
    digest = hashlib.sha256(f"{IMAGE_VERSION}\0{PASSWD}\0{GROUP}\n".encode())
    for path in paths:
        if "/__pycache__" in path:  # written as Python runs; stale ones are ignored by Python
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            line = f"{path}\0dir\0{info.st_mode}"
        elif stat.S_ISLNK(info.st_mode):
            line = f"{path}\0link\0{os.readlink(path)}"
        else:
            line = f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_mode}"
        digest.update(line.encode() + b"\n")
    if dpkg_status.exists():
        digest.update(dpkg_status.read_bytes())
    return digest.hexdigest()[:16]


def _add_text(archive: tarfile.TarFile, name: str, text: str, mode: int = 0o644) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name.lstrip("/"))
    info.size, info.mode = len(data), mode
    archive.addfile(info, _bytes_io(data))


def _bytes_io(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """Everything belongs to root; folders are traversable (`/root` above the interpreter)."""
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if info.isdir():
        info.mode |= 0o755
    info.mode &= ~0o022  # nothing in the image is writable by others
    return info


def _under_scratch(path: str) -> bool:
    """Under /tmp or /var/tmp, which every container covers with a tmpfs."""
    return any(path.startswith(folder + "/") for folder in ("/tmp", "/var/tmp"))


def write_rootfs(target: Path) -> None:
    """The root filesystem as a tar file at `target`."""
    with tarfile.open(target, "w") as archive:
        for name in MOUNT_POINTS:
            info = tarfile.TarInfo(name.lstrip("/"))
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if "tmp" in name else 0o755
            archive.addfile(info)
        for path in rootfs_paths():
            if path.startswith("/etc/") and path in ("/etc/passwd", "/etc/group"):
                continue
            if path in MOUNT_POINTS or _under_scratch(path):
                continue  # a mount covers it: an environment under /tmp is bound in instead
            archive.add(path, arcname=path.lstrip("/"), recursive=False, filter=_root_owned)
        _add_text(archive, "/etc/passwd", PASSWD)
        _add_text(archive, "/etc/group", GROUP)
        _add_text(archive, "/etc/hostname", "sandbox\n")


def ensure_image(client: docker.DockerClient) -> str:
    """The base image's tag, built and imported first if this engine lacks it."""
    import docker.errors

    tag = f"{IMAGE_REPOSITORY}:{fingerprint()}"
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    with tempfile.TemporaryDirectory(prefix="cursorbench-rootfs-") as folder:
        tar = Path(folder) / "rootfs.tar"
        write_rootfs(tar)
        repository, _, version = tag.partition(":")
        try:
            client.api.import_image_from_file(str(tar), repository=repository, tag=version)
            client.images.get(tag)
        except docker.errors.DockerException as error:
            raise SandboxUnavailable(f"cannot build the sandbox image: {error}") from None
    prune_images(client, keep=tag)
    return tag


def prune_images(client: docker.DockerClient, keep: str) -> list[str]:
    """Removes this repository's tags but `keep` (images of earlier fingerprints); never an
    image of another repository, nor one a container still uses (the engine refuses; it
    stays for the next build to remove). Returns the tags removed."""
    import docker.errors

    removed: list[str] = []
    for image in client.images.list(name=IMAGE_REPOSITORY):
        for tag in image.tags:
            if tag == keep or tag.partition(":")[0] != IMAGE_REPOSITORY:
                continue
            try:
                client.images.remove(tag)
            except docker.errors.APIError:
                continue  # in use by a container (another run's sandbox)
            removed.append(tag)
    return removed
