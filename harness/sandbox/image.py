"""The Docker backend's base image, built on this machine from what the host already has.

No image registry is reachable, so the image is made by `docker import` of a root
filesystem assembled here, small and read-only at run time. It holds exactly the
sandbox's view (`view.py`), the same files bubblewrap shows: the system files of the
allow-list (a few Debian packages, their libraries, a minimal `/etc` with its own
`passwd`/`group`) and the harness's Python environment at its host path, less the
base interpreter's site-packages and test suite and the large distributions only the
harness uses (`LEFT_OUT`), which would make the image 2 GB instead of a few hundred MB.

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
import io
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from harness.sandbox.protocol import SandboxUnavailable
from harness.sandbox.view import (
    DPKG_STATUS,
    GRADER_UID,
    GROUP,
    PASSWD,
    WRITTEN,
    python_files,
    system_inputs,
    system_paths,
)

__all__ = ["GRADER_UID", "IMAGE_REPOSITORY", "ensure_image", "fingerprint", "rootfs_paths"]

if TYPE_CHECKING:
    import docker

IMAGE_REPOSITORY = "cursorbench-base"
IMAGE_VERSION = "4"  # bump when what goes in changes
MOUNT_POINTS = ("/workspace", "/tmp", "/var/tmp", "/.baseline", "/.ctl", "/proc", "/sys", "/dev")


@functools.cache
def _inputs() -> tuple[str, ...]:
    """What the image is made of, but the libraries (they follow from these and dpkg)."""
    return (*system_inputs(), *python_files())


def rootfs_paths() -> tuple[str, ...]:
    """Every host path that goes into the image, sorted (folders before their contents):
    the view's system paths and its Python files (`view.py`), and the folders above them."""
    every = set(system_paths()) | set(python_files())
    for path in list(every):
        parent = os.path.dirname(path)
        while parent not in every and parent != "/":
            every.add(parent)
            parent = os.path.dirname(parent)
    return tuple(sorted(p for p in every if os.path.lexists(p) and p not in WRITTEN))


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
