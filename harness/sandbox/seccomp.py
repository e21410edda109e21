"""A seccomp filter that closes covert channels between concurrent sandboxes.

Sandboxes running side by side share inodes: the read-only system folders and
the Python environment are bind mounts of the same files, and bubblewrap's
`/dev` binds the host's device nodes. Anything a process can attach to such an
inode and another can observe is a channel between them: record locks and
`flock`, leases, inotify/fanotify/dnotify watches. The per-uid kernel keyring
is shared by every process of the same uid. This module builds a classic-BPF
program, in pure Python, for bubblewrap's `--seccomp FD` option, which:

- makes lock-taking calls succeed without doing anything (`flock`, and `fcntl`
  with F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE): the filter
  answers SECCOMP_RET_ERRNO with errno 0, for which the kernel skips the call
  and returns 0. Nobody inside a sandbox can then hold a lock, so F_GETLK
  (left alone) never reports one. The price: locks no longer exclude anything
  *within* a sandbox either, so two processes of one sandbox writing the same
  SQLite database at once are not serialised (one writer at a time is fine);
- fails watches and keyrings with ENOSYS, so programs fall back to polling or
  to keyring-free paths: inotify_*, fanotify_*, add_key, request_key, keyctl;
  `fcntl(F_NOTIFY)` (dnotify) fails with EINVAL, as on a kernel without it;
- fails with EPERM what a sandbox has no business doing: ptrace,
  process_vm_readv/writev, perf_event_open, bpf, userfaultfd, kexec_*,
  module loading, mount/umount2/pivot_root and the new mount API, unshare,
  setns, and `clone` with any CLONE_NEW* flag (no new namespaces);
- fails `clone3` with ENOSYS: seccomp cannot read its flags (they sit in
  memory), and glibc falls back to `clone`, whose flags it can read;
- allows `personality` only to query (0xffffffff) or to set the default
  (PER_LINUX, 0); anything else (e.g. ADDR_NO_RANDOMIZE) fails with EPERM;
- allows everything else.

The first check is the architecture: the program is built for the kernel's
native ABI (x86_64 or aarch64). A process using another ABI (i386 or x32 on
x86_64, arm32 on aarch64) would have different syscall numbers, so the filter
kills it (i386, arm32) or fails the call with EPERM (x32). On other machines
`seccomp_program()` returns None and callers run without the filter.

Not covered: channels that need no syscall of their own, such as page-cache
residency of shared files (mincore, RWF_NOWAIT reads, timing), CPU and memory
contention, and `/proc` views of system-wide counters; io_uring is not
filtered (it has no lock or watch operations).
"""

from __future__ import annotations

import atexit
import errno
import functools
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

# seccomp return actions (linux/seccomp.h)
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000

# classic BPF opcodes (linux/filter.h)
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K

# struct seccomp_data offsets; arguments are read as their low 32 bits (little-endian)
NR_OFFSET = 0
ARCH_OFFSET = 4
ARGS_OFFSET = 16

X32_SYSCALL_BIT = 0x40000000

F_SETLK, F_SETLKW = 6, 7
F_SETLK64, F_SETLKW64 = 13, 14  # 32-bit names; on 64-bit kernels they fail anyway
F_OFD_SETLK, F_OFD_SETLKW = 37, 38
F_SETLEASE = 1024
F_NOTIFY = 1026
LOCK_COMMANDS = (F_SETLK, F_SETLKW, F_SETLK64, F_SETLKW64, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE)

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NAMESPACES = (
    CLONE_NEWNS
    | CLONE_NEWCGROUP
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWUSER
    | CLONE_NEWPID
    | CLONE_NEWNET
)

PERSONALITY_QUERY = 0xFFFFFFFF
PER_LINUX = 0

ENOSYS_CALLS = (
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "inotify_rm_watch",
    "fanotify_init",
    "fanotify_mark",
    "add_key",
    "request_key",
    "keyctl",
    "clone3",
)
EPERM_CALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "perf_event_open",
    "bpf",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
)


@dataclass(frozen=True)
class Arch:
    """One kernel ABI: its audit number and the syscall numbers the filter names."""

    name: str
    audit_arch: int
    foreign_arches: tuple[int, ...]  # other ABIs the same kernel runs; killed
    has_x32: bool
    syscalls: dict[str, int]


AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003
AUDIT_ARCH_AARCH64 = 0xC00000B7
AUDIT_ARCH_ARM = 0x40000028

X86_64 = Arch(
    name="x86_64",
    audit_arch=AUDIT_ARCH_X86_64,
    foreign_arches=(AUDIT_ARCH_I386,),
    has_x32=True,
    syscalls={
        "flock": 73,
        "fcntl": 72,
        "clone": 56,
        "personality": 135,
        "inotify_init": 253,
        "inotify_init1": 294,
        "inotify_add_watch": 254,
        "inotify_rm_watch": 255,
        "fanotify_init": 300,
        "fanotify_mark": 301,
        "add_key": 248,
        "request_key": 249,
        "keyctl": 250,
        "clone3": 435,
        "ptrace": 101,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "perf_event_open": 298,
        "bpf": 321,
        "userfaultfd": 323,
        "kexec_load": 246,
        "kexec_file_load": 320,
        "init_module": 175,
        "finit_module": 313,
        "delete_module": 176,
        "mount": 165,
        "umount2": 166,
        "pivot_root": 155,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "unshare": 272,
        "setns": 308,
    },
)

AARCH64 = Arch(  # the asm-generic numbers; aarch64 has no inotify_init (only inotify_init1)
    name="aarch64",
    audit_arch=AUDIT_ARCH_AARCH64,
    foreign_arches=(AUDIT_ARCH_ARM,),
    has_x32=False,
    syscalls={
        "flock": 32,
        "fcntl": 25,
        "clone": 220,
        "personality": 92,
        "inotify_init1": 26,
        "inotify_add_watch": 27,
        "inotify_rm_watch": 28,
        "fanotify_init": 262,
        "fanotify_mark": 263,
        "add_key": 217,
        "request_key": 218,
        "keyctl": 219,
        "clone3": 435,
        "ptrace": 117,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "perf_event_open": 241,
        "bpf": 280,
        "userfaultfd": 282,
        "kexec_load": 104,
        "kexec_file_load": 294,
        "init_module": 105,
        "finit_module": 273,
        "delete_module": 106,
        "mount": 40,
        "umount2": 39,
        "pivot_root": 41,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "unshare": 97,
        "setns": 268,
    },
)

ARCHES = {"x86_64": X86_64, "aarch64": AARCH64}


class SeccompUnsupported(RuntimeError):
    """The filter cannot be built for this machine."""


def native_arch() -> Arch | None:
    """The running kernel's ABI when the filter knows it, else None."""
    return ARCHES.get(os.uname().machine)


class _Assembler:
    """Collects BPF instructions whose jump targets are labels, then resolves them."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def load(self, offset: int) -> None:
        self.code.append((LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, value: int, *, true: str | int = 0, false: str | int = 0) -> None:
        self.code.append((op, true, false, value))

    def ret(self, action: int) -> None:
        self.code.append((RET_K, 0, 0, action))

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (op, true, false, value) in enumerate(self.code):
            jt = self._offset(index, true)
            jf = self._offset(index, false)
            out += struct.pack("=HBBI", op, jt, jf, value)  # struct sock_filter
        return bytes(out)

    def _offset(self, index: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        offset = self.labels[target] - index - 1
        if not 0 <= offset <= 255:
            raise SeccompUnsupported(f"BPF jump to {target} out of range ({offset})")
        return offset


def build_program(arch: Arch) -> bytes:
    """The filter for `arch`, as the raw `struct sock_filter` array bubblewrap reads."""
    asm = _Assembler()
    asm.load(ARCH_OFFSET)
    asm.jump(JEQ_K, arch.audit_arch, false="kill")
    asm.load(NR_OFFSET)
    if arch.has_x32:
        asm.jump(JGE_K, X32_SYSCALL_BIT, true="eperm")
    asm.jump(JEQ_K, arch.syscalls["flock"], true="succeed")
    asm.jump(JEQ_K, arch.syscalls["fcntl"], true="fcntl")
    asm.jump(JEQ_K, arch.syscalls["clone"], true="clone")
    asm.jump(JEQ_K, arch.syscalls["personality"], true="personality")
    for name in ENOSYS_CALLS:
        if name in arch.syscalls:
            asm.jump(JEQ_K, arch.syscalls[name], true="enosys")
    for name in EPERM_CALLS:
        asm.jump(JEQ_K, arch.syscalls[name], true="eperm")
    asm.ret(RET_ALLOW)

    asm.label("fcntl")  # fcntl(fd, cmd, arg): cmd is an unsigned int
    asm.load(ARGS_OFFSET + 8)
    for command in LOCK_COMMANDS:
        asm.jump(JEQ_K, command, true="succeed")
    asm.jump(JEQ_K, F_NOTIFY, true="einval")
    asm.ret(RET_ALLOW)

    asm.label("clone")  # clone(flags, ...): the kernel reads the low 32 bits of flags
    asm.load(ARGS_OFFSET)
    asm.jump(JSET_K, CLONE_NAMESPACES, true="eperm")
    asm.ret(RET_ALLOW)

    asm.label("personality")  # personality(unsigned int persona)
    asm.load(ARGS_OFFSET)
    asm.jump(JEQ_K, PERSONALITY_QUERY, true="allow")
    asm.jump(JEQ_K, PER_LINUX, true="allow")
    asm.ret(RET_ERRNO | errno.EPERM)

    asm.label("allow")
    asm.ret(RET_ALLOW)
    asm.label("succeed")
    asm.ret(RET_ERRNO | 0)  # the kernel skips the call and returns 0
    asm.label("enosys")
    asm.ret(RET_ERRNO | errno.ENOSYS)
    asm.label("eperm")
    asm.ret(RET_ERRNO | errno.EPERM)
    asm.label("einval")
    asm.ret(RET_ERRNO | errno.EINVAL)
    asm.label("kill")
    asm.ret(RET_KILL_PROCESS)
    return asm.assemble()


def seccomp_program() -> bytes | None:
    """The filter for this machine's kernel, or None where its ABI is not known."""
    arch = native_arch()
    return None if arch is None else build_program(arch)


@functools.cache
def seccomp_file() -> Path | None:
    """A private file holding the filter, written once per process; None where unsupported.

    Open it for each bubblewrap command and pass the descriptor: `pass_fds=(fd,)` and
    `bwrap --seccomp FD ...` (bubblewrap reads the program to its end, so a descriptor
    serves one command). The file lives in a fresh 0700 folder and is removed at exit.
    """
    program = seccomp_program()
    if program is None:
        return None
    folder = Path(tempfile.mkdtemp(prefix="cursorbench-seccomp-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "filter.bpf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(fd, "wb") as file:
        file.write(program)
    return path


def bwrap_args(fd: int) -> list[str]:
    """bubblewrap's options that install the filter read from `fd` on the command."""
    return ["--seccomp", str(fd)]
