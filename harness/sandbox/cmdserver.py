"""The command server: runs inside a sandbox and forks one confined process per command.

It is started once per sandbox (as the container's PID 1 under Docker, as the child of
bubblewrap's init under bubblewrap), as root without capabilities beyond SETUID, SETGID
and KILL, in the sandbox's own PID, mount, network and IPC namespaces, and listens on a
Unix socket in a folder only root may enter, or on a listening socket it inherited
(`fd:N`, bubblewrap: then no path inside the sandbox leads to it). Run as
`python -I -c SOURCE SOCKET [SECCOMP_FILE [FRESH_FOLDER ...]]` (or with the source read from
a pipe, `/dev/fd/N`): it imports nothing but the standard library, since it runs under the
sandbox's Python, not the harness's packages.

One request per connection: a length-prefixed JSON header (argv, env, cwd, uid, file size
limit) and, passed as descriptors (SCM_RIGHTS), the command's output pipe, its stdin and,
for a report, the pipe it may append to (fd 3). The host keeps the other ends and reads
them exactly as it reads a local subprocess (`process.collect`), so output caps, timeouts
and the report channel work the same. Per command the server forks a child that starts a
new session, takes the descriptors, volunteers as the OOM killer's first victim, caps
file sizes, drops to the requested unprivileged uid (groups cleared, every capability
gone, no_new_privs), installs the harness's seccomp filter, and execs the command.

When the command exits, or the host sends `K` (timeout, too much output) or hangs up,
every process not owned by root in the namespace is SIGKILLed, repeatedly until none is
left: background children die with the command, as they do when a per-command PID
namespace ends. Each FRESH_FOLDER (bubblewrap: /tmp, /var/tmp) is then emptied, as the
command's user, so the next command finds it empty as in a namespace of its own. Then the
exit status, the workspace's free space and `reset` go back as one JSON line; `reset` is
true when the sandbox kept state the server could not clear (a process that outlived every
kill, a fresh folder it could not empty, a System V IPC object) and the host should start a
fresh sandbox before the next command. Commands run one at a time: a second connection
waits until the first ends.
"""

import contextlib
import ctypes
import json
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import time

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAP_VERSION_3 = 0x20080522
MAX_HEADER = 1 << 20
MAX_FDS = 3


class _Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:  # loaded once, in the server: each forked child has it already
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _drop_capabilities(libc):
    header = (ctypes.c_uint32 * 2)(CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable, twice: all empty
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def _child(request, fds, program):
    """In the forked child: confine, then exec. Never returns."""
    try:
        os.setsid()
        names = request["fds"]
        given = dict(zip(names, fds, strict=True))
        stdin = given.get("in")
        if stdin is None:
            stdin = os.open("/dev/null", os.O_RDONLY)
        os.dup2(stdin, 0)
        os.dup2(given["out"], 1)
        os.dup2(given["out"], 2)
        if "report" in given:
            os.dup2(given["report"], 3)
        os.closerange(4 if "report" in given else 3, 65536)
        try:
            with open("/proc/self/oom_score_adj", "w") as file:
                file.write("1000")
        except OSError:
            pass
        size = request["fsize"]
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        os.umask(0o022)
        uid = request["uid"]
        libc = _libc()
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        _drop_capabilities(libc)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "no_new_privs")
        if program:
            buffer = ctypes.create_string_buffer(program)
            prog = _Filter(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
            if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "seccomp")
        os.chdir(request["cwd"])
        argv = request["argv"]
        os.execvpe(argv[0], argv, request["env"])
    except BaseException as error:  # report anything, then leave
        try:
            os.write(2, f"sandbox: cannot run {request.get('argv')!r}: {error}\n".encode())
        finally:
            os._exit(127)


def _others():
    """Live processes of the namespace not owned by root (never this server)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as file:
                status = file.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uid = fields.get("Uid", "0").split()[0]
        state = fields.get("State", "").strip()[:1]
        if uid != "0" and state != "Z":
            found.append(int(name))
    return found


def _entries(folder):
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _remove(path):
    """Removes a file or a tree the caller owns, making its folders writable as it goes."""
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)
        for name in os.listdir(path):
            _remove(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)


def _empty_as(folders, uid, keep):
    """Empties `folders` in a child that has become `uid` (whose files they hold), except the
    entries in `keep[folder]`: what the folder held when the server started."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for folder in folders:
                for name in os.listdir(folder):
                    if name not in keep.get(folder, ()):
                        _remove(os.path.join(folder, name))
        except BaseException:
            os._exit(1)
        os._exit(0)
    os.waitpid(pid, 0)


def _ipc_objects():
    """True when a System V shared memory segment, message queue or semaphore set exists."""
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as file:
                if len(file.read().splitlines()) > 1:  # a header line, then one per object
                    return True
        except OSError:
            pass
    return False


class Server:
    def __init__(self, path, program, fresh=()):
        self.program = program
        self.fresh = list(fresh)
        # What the fresh folders hold before any command: the folders bubblewrap made to mount
        # host paths under /tmp (a project or venv kept there), root's and read-only, which a
        # command cannot write into; they stay, everything a command adds goes.
        self.baseline = {folder: set(_entries(folder)) for folder in self.fresh}
        self.uid = None
        if path.startswith("fd:"):  # inherited, already listening
            self.listener = socket.socket(fileno=int(path[3:]))
        else:
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            making = f"{path}.{os.getpid()}"  # the path appears only once it accepts connections
            if os.path.exists(making):
                os.unlink(making)
            self.listener.bind(making)
            os.chmod(making, 0o600)
            self.listener.listen(64)
            os.rename(making, path)
        self.wakeup_read, wakeup_write = os.pipe()
        os.set_blocking(wakeup_write, False)
        os.set_blocking(self.wakeup_read, False)
        signal.set_wakeup_fd(wakeup_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(self.wakeup_read, selectors.EVENT_READ)
        self.conn = None
        self.pid = None
        self.status = None

    def serve(self):
        while True:
            for key, _ in self.selector.select(timeout=5.0):
                if key.fileobj is self.listener:
                    self.accept()
                elif key.fileobj == self.wakeup_read:
                    while True:
                        try:
                            if not os.read(self.wakeup_read, 512):
                                break
                        except BlockingIOError:
                            break
                elif key.fileobj is self.conn:
                    self.stop()
            self.reap()

    def accept(self):
        conn, _ = self.listener.accept()
        try:
            request, fds = self.receive(conn)
        except (OSError, ValueError) as error:
            conn.close()
            print(f"cmdserver: bad request: {error}", file=sys.stderr)
            return
        pid = os.fork()
        if pid == 0:
            _child(request, fds, self.program)
        for fd in fds:
            os.close(fd)
        self.uid = request.get("uid")
        self.conn, self.pid, self.status = conn, pid, None
        self.selector.unregister(self.listener)  # one command at a time
        self.selector.register(conn, selectors.EVENT_READ)

    def receive(self, conn):
        size_bytes, fds = b"", []
        fd_space = socket.CMSG_SPACE(MAX_FDS * 4)
        while len(size_bytes) < 4:
            data, ancillary, _, _ = conn.recvmsg(4 - len(size_bytes), fd_space)
            if not data:
                raise ValueError("connection closed")
            size_bytes += data
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    count = len(payload) // 4
                    fds += list(struct.unpack(f"{count}i", payload[: count * 4]))
        (size,) = struct.unpack(">I", size_bytes)
        if size > MAX_HEADER:
            raise ValueError("header too large")
        body = b""
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                raise ValueError("connection closed")
            body += chunk
        request = json.loads(body)
        if len(fds) != len(request["fds"]):
            raise ValueError("descriptors do not match the request")
        return request, fds

    def stop(self):
        """The host asked to kill the command (or hung up)."""
        self.teardown()
        self.reap()

    def _reap_some(self):
        """Reaps every child that exited (as PID 1 the orphans are ours too)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.pid:
                self.status = os.waitstatus_to_exitcode(status)

    def reap(self):
        self._reap_some()
        if self.pid is not None and self.status is not None:
            self.finish()

    def teardown(self):
        """SIGKILLs every process not owned by root, until none is left (a fork storm
        races); False when some are still alive after every try."""
        for _ in range(200):
            victims = _others()
            if not victims:
                return True
            for pid in victims:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            self._reap_some()
            time.sleep(0.001)
        return not _others()

    def _added(self, folder):
        return [name for name in _entries(folder) if name not in self.baseline.get(folder, ())]

    def clear_state(self):
        """Empties the fresh folders; False when the sandbox keeps state between commands."""
        used = [folder for folder in self.fresh if self._added(folder)]
        if used and self.uid is not None:
            _empty_as(used, self.uid, self.baseline)
        if any(self._added(folder) for folder in self.fresh):
            return False
        return not (self.fresh and _ipc_objects())

    def finish(self):
        clean = self.teardown() and self.clear_state()
        conn, code = self.conn, self.status
        self.conn, self.pid, self.status = None, None, None
        self.selector.unregister(conn)
        self.selector.register(self.listener, selectors.EVENT_READ)
        try:
            stats = os.statvfs("/workspace")
            free = stats.f_bavail * stats.f_frsize
        except OSError:
            free = -1
        with contextlib.suppress(OSError):
            reply = {"exit": code, "workspace_free": free, "reset": not clean}
            conn.sendall(json.dumps(reply).encode() + b"\n")
        conn.close()


def main():
    program = b""
    if len(sys.argv) > 2 and sys.argv[2] and os.path.exists(sys.argv[2]):
        with open(sys.argv[2], "rb") as file:
            program = file.read()
    _libc()
    server = Server(sys.argv[1], program, sys.argv[3:])
    if sys.argv[1].startswith("fd:"):  # the host waits for this line before the first command
        os.write(1, b"ready\n")
    server.serve()


if __name__ == "__main__":
    main()
