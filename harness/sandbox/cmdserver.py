"""The command server: runs inside a sandbox and spawns one confined process per command.

Why it exists, what it confines and what differs from a namespace per command are in
docs/sandboxes.md ("Fast confined commands under bubblewrap", "Nothing outlives its
command"); this is the protocol and the mechanics.

Started once per sandbox (the container's PID 1 under Docker, the child of bubblewrap's
init under bubblewrap) as `python -I -c SOURCE SOCKET SECCOMP_FILE HOST_PIDNS
[FRESH_FOLDER ...]` (the source may come from a pipe, `/dev/fd/N`; SECCOMP_FILE may be
""). It imports only the standard library: it runs under the sandbox's Python. It refuses
to start (exit 2, one line on stderr) unless its PID namespace is neither its launcher's
(HOST_PIDNS, `pid:[N]`) nor the host's first: the end of a command may kill every other
process of the namespace. At start it confines itself as far as a command is confined,
short of its user (groups cleared, no inheritable or ambient capability, no_new_privs,
seccomp where bubblewrap has not installed it, umask 022, OOM score 1000, every
descriptor close-on-exec).

One request per connection on SOCKET (a path only root may enter, or an inherited `fd:N`):
a length-prefixed JSON header (argv, env, cwd, uid, file size limit) and, by SCM_RIGHTS,
the command's output pipe, its stdin, the report pipe (fd 3) and, when the host made one,
the descriptors of the command's cgroup (`cmdgroups.FDS`). The command is
`posix_spawn`ed (a vfork) with POSIX_SPAWN_RESETIDS from a second thread, the spawner,
whose real ids alone are set to the command's for the spawn (by system call: the C
library's wrappers would change every thread's), in a new session, inside its cgroup.
When it exits, or the host sends `K` or hangs up, its cgroup is killed (`cgroup.kill`,
then `kill(2)` of each process still listed, since a leader gone by SYS_exit ignores
`cgroup.kill`) or, without a cgroup, every other process of the namespace is stopped and
killed (a zombie leader with live threads counts as alive). Each FRESH_FOLDER is emptied
as the command's user. The reply is one JSON line: exit status, the workspace's free
space, `ended_by`, and `reset` when state could not be cleared (a process that outlived
every kill, a folder not emptied, a System V IPC object) and the host should start a fresh
sandbox. Commands run one at a time. On an architecture whose id system calls are not in
`_ID_CALLS` the whole process changes ids for the spawn.
"""

import contextlib
import ctypes
import json
import os
import queue
import resource
import selectors
import signal
import socket
import struct
import sys
import threading
import time

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAP_VERSION_3 = 0x20080522
MAX_HEADER = 1 << 20
MAX_FDS = 8  # out, in, report, and a command cgroup's five (cmdgroups.FDS)
INIT_PID_NAMESPACE = 0xEFFFFFFC  # PROC_PID_INIT_INO: the inode of the host's first PID namespace
KILL_WAIT_S = 10.0


class _Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _keep_no_inheritable_capability(libc):
    """Clears the inheritable and ambient sets, keeping the permitted and effective ones."""
    header = (ctypes.c_uint32 * 2)(CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; low then high words
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[2] = data[5] = 0
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def confine_self(program):
    """What every command inherits: see the module's docstring."""
    libc = _libc()
    os.setgroups([])
    _keep_no_inheritable_capability(libc)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "no_new_privs")
    if program:
        buffer = ctypes.create_string_buffer(program)
        prog = _Filter(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp")
    os.umask(0o022)
    try:
        with open("/proc/self/oom_score_adj", "w") as file:
            file.write("1000")
    except OSError:
        pass
    for name in os.listdir("/proc/self/fd"):  # the source pipe, an inherited listener
        if int(name) > 2:
            with contextlib.suppress(OSError):
                os.set_inheritable(int(name), False)


def _refuse(why):
    print(f"cmdserver: refusing to start: {why}", file=sys.stderr, flush=True)
    sys.exit(2)


def check_own_namespace(launcher):
    """Exits unless this process is in a PID namespace of its own: see the module's docstring."""
    try:
        mine = os.readlink("/proc/self/ns/pid")
    except OSError as error:
        _refuse(f"cannot read its PID namespace: {error}")
    if not (launcher.startswith("pid:[") and launcher.endswith("]")):
        _refuse(f"the launcher's PID namespace is not given (got {launcher!r})")
    if mine == launcher:
        _refuse(f"it is in its launcher's PID namespace ({mine}), not a sandbox's")
    if mine == f"pid:[{INIT_PID_NAMESPACE}]":
        _refuse(f"it is in the host's initial PID namespace ({mine}), not a sandbox's")


def _cap_file_size(size):
    """Sets the file size limit commands inherit; lowering it needs no privilege."""
    if resource.getrlimit(resource.RLIMIT_FSIZE) != (size, size):
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


# setresuid and setresgid by number: the C library's wrappers change every thread's ids,
# the system calls only the caller's.
_ID_CALLS = {"x86_64": (117, 119), "aarch64": (147, 149)}  # (setresuid, setresgid)
_ID_NUMBERS = _ID_CALLS.get(os.uname().machine)  # looked up once, not per command


def _set_ids(uid, gid):
    """Sets this thread's real ids, keeping root as its effective and saved ones."""
    if _ID_NUMBERS is None:  # elsewhere the whole process changes: see the module's docstring
        os.setresgid(gid, 0, 0)
        os.setresuid(uid, 0, 0)
        return
    libc = _libc()
    setresuid, setresgid = _ID_NUMBERS
    if uid == 0:  # back to root: the uid first, which restores the right to change the gid
        calls = [(setresuid, uid), (setresgid, gid)]
    else:
        calls = [(setresgid, gid), (setresuid, uid)]
    for number, value in calls:
        if libc.syscall(number, value, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "setresuid/setresgid")


def spawn(request, fds):
    """Starts the command of `request` with its descriptors `fds`; its pid. Called from the
    spawner thread alone (`Spawner`)."""
    uid = request["uid"]
    if not isinstance(uid, int) or uid <= 0:
        raise ValueError("commands run as an unprivileged user")
    given = dict(zip(request["fds"], fds, strict=True))
    if given.get("report") == 3:  # dup2 onto itself would keep close-on-exec set
        given["report"] = os.dup(3)
        fds.append(given["report"])
    actions: list[tuple] = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0)]
    if "in" in given:
        actions = [(os.POSIX_SPAWN_DUP2, given["in"], 0)]
    actions += [(os.POSIX_SPAWN_DUP2, given["out"], 1), (os.POSIX_SPAWN_DUP2, given["out"], 2)]
    if "report" in given:
        actions.append((os.POSIX_SPAWN_DUP2, given["report"], 3))
    _cap_file_size(request["fsize"])
    os.chdir(request["cwd"])
    env = request["env"]
    os.environ["PATH"] = env.get("PATH", os.defpath)  # posix_spawnp searches the caller's PATH
    argv = request["argv"]
    group, home = given.get("cg_procs"), given.get("cg_home")
    if (group is None) != (home is None):
        raise ValueError("a command cgroup needs its home too")
    if group is not None:
        os.write(group, b"0")  # the server for the spawn alone: the command is born inside
    try:
        _set_ids(uid, uid)
        try:
            return os.posix_spawnp(
                argv[0],
                argv,
                env,
                file_actions=actions,
                setsid=True,
                resetids=True,
                setsigdef=DEFAULT_SIGNALS,
            )
        finally:
            _set_ids(0, 0)
            os.chdir("/")
    finally:
        if home is not None:
            _go_home(home)


# Every signal a command may be sent back to its default: Python ignores SIGPIPE and SIGXFSZ,
# and a launcher started in the background (nohup, `&` in a script) ignores SIGINT and
# SIGQUIT, which would otherwise pass to every command.
DEFAULT_SIGNALS = tuple(
    number for number in signal.valid_signals() if number not in (signal.SIGKILL, signal.SIGSTOP)
)


def _go_home(home):
    """Moves the server out of the command's cgroup; one that cannot would die with the
    command, so it ends now instead (the host starts a fresh sandbox)."""
    try:
        os.write(home, b"0")
    except OSError as error:
        print(f"cmdserver: cannot leave the command's cgroup: {error}", file=sys.stderr)
        os._exit(70)


class Spawner:
    """Runs `spawn` on a thread of its own. Signals sent to the server (`kill -1`, `kill PID`,
    `pkill`) are checked against its main thread's ids, which stay root's: only this thread's
    real ids are ever the command's, and only during a spawn."""

    def __init__(self):
        self.requests: queue.SimpleQueue = queue.SimpleQueue()
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="spawner", daemon=True).start()

    def spawn(self, request, fds):
        self.requests.put((request, fds))
        error, pid = self.results.get()
        if error is not None:
            raise error
        return pid

    def _serve(self):
        while True:
            request, fds = self.requests.get()
            try:
                self.results.put((None, spawn(request, fds)))
            except BaseException as error:  # handed to the caller
                self.results.put((error, None))


def _read(path):
    """A small /proc file's bytes; b"" when it cannot be read (the process is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return os.read(fd, 1 << 16)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _state(path):
    """The one-letter state in a /proc stat file ("" when gone); the name before it may hold
    spaces and parentheses, the state follows the last `)`."""
    stat = _read(path)
    return stat[stat.rfind(b")") + 2 :][:1].decode(errors="replace")


def _liveness(pid):
    """None when process `pid` is gone or a zombie with no live thread; "stopped" when every
    live thread is stopped; else "running". A leader that left by a raw SYS_exit shows Z while
    its threads run on: its threads decide."""
    state = _state(f"/proc/{pid}/stat")
    if state in ("", "Z", "X"):
        if not state:
            return None
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return None
        states = {_state(f"/proc/{pid}/task/{task}/stat") for task in tasks} - {"", "Z", "X"}
    else:
        states = {state}
    if not states:
        return None
    return "stopped" if states <= {"T", "t"} else "running"


def _others():
    """Live processes of the namespace but its init and this server, with their liveness:
    with no stray process, one directory listing."""
    found = {}
    ours = {"1", str(os.getpid())}
    for name in os.listdir("/proc"):
        if not name.isdigit() or name in ours:
            continue
        liveness = _liveness(name)
        if liveness is not None:
            found[int(name)] = liveness
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
    # a header line, then one line per object
    return any(_read(f"/proc/sysvipc/{kind}").count(b"\n") > 1 for kind in ("shm", "msg", "sem"))


class Server:
    def __init__(self, path, fresh=()):
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
        self.group = None  # the command's cgroup: its cgroup.kill, .events, .procs descriptors
        self.ended_by = None
        self.spawner = Spawner()

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
        try:
            pid = self.spawner.spawn(request, fds)
        except (OSError, ValueError, KeyError, TypeError) as error:
            pid = None
            with contextlib.suppress(OSError, KeyError, IndexError):
                out = fds[request["fds"].index("out")]
                os.write(out, f"sandbox: cannot run {request.get('argv')!r}: {error}\n".encode())
        finally:
            named = dict(zip(request.get("fds", ()), fds, strict=False))
            kept = [named.get("cg_kill"), named.get("cg_events"), named.get("cg_list")]
            self.group = tuple(kept) if None not in kept else None
            for fd in fds:
                if fd not in kept:
                    os.close(fd)
        self.uid = request.get("uid")
        self.conn, self.pid, self.status = conn, pid, None
        if pid is None:
            self.status = 127  # nothing ran: the next `reap` answers
        self.selector.unregister(self.listener)  # one command at a time
        self.selector.register(conn, selectors.EVENT_READ)

    def receive(self, conn):
        size_bytes, fds = b"", []
        fd_space = socket.CMSG_SPACE(MAX_FDS * 4)
        while len(size_bytes) < 4:
            data, ancillary, _, _ = conn.recvmsg(
                4 - len(size_bytes), fd_space, socket.MSG_CMSG_CLOEXEC
            )
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
        if self.conn is not None and self.status is not None:
            self.finish()

    def teardown(self):
        """Ends everything the command started: its cgroup, and the namespace sweep where
        there is none (or where something lives outside it); False when some process
        outlived every try."""
        ended = True
        self.ended_by = "namespace sweep"
        if self.group is not None:
            ended = self._kill_group(self.group)
            self.ended_by = "cgroup"
        if self.group is None or _others():
            if self.group is not None:
                print("cmdserver: a process outside the command's cgroup: swept", file=sys.stderr)
                ended = False  # the host starts a fresh sandbox
            ended = self._sweep() and ended
        return ended

    def _kill_group(self, group):
        """Writes the command cgroup's `cgroup.kill`, then kills each process it still lists,
        until it holds none."""
        kill, events, listing = group
        with contextlib.suppress(OSError):
            os.write(kill, b"1")
        deadline = time.monotonic() + KILL_WAIT_S
        ours = set(_entries("/proc/self/task"))  # a recycled pid must never be the server's
        while True:
            try:
                if b"populated 1" not in os.pread(events, 4096, 0):
                    return True
                left = os.pread(listing, 1 << 20, 0).split()
            except OSError:
                return True  # the folder is gone, and with it every process in it
            for pid in left:
                if pid.decode() not in ours and pid != b"1":
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)  # the whole thread group
            self._reap_some()
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)

    def _sweep(self):
        """Stops every other process of the namespace until a pass finds none running (a
        stopped process cannot fork), then SIGKILLs them all, until none is left. Only ever
        in the sandbox's own PID namespace (`check_own_namespace`)."""
        for round_ in range(200):
            victims = _others()
            if not victims:
                return True
            # one that will not stop (uninterruptible sleep) must not spare the rest
            frozen = round_ >= 20 or all(state == "stopped" for state in victims.values())
            sent = signal.SIGKILL if frozen else signal.SIGSTOP
            for pid in victims:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sent)
            if frozen:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(-1, signal.SIGKILL)  # all at once: a fork in flight dies too
            self._reap_some()
            time.sleep(0.001)
        return not _others()

    def _close_group(self):
        for fd in self.group or ():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.group = None

    def _added(self, folder):
        return [name for name in _entries(folder) if name not in self.baseline.get(folder, ())]

    def clear_state(self):
        """Empties the fresh folders; False when the sandbox keeps state between commands."""
        used = [folder for folder in self.fresh if self._added(folder)]
        if used and self.uid is not None:
            _empty_as(used, self.uid, self.baseline)
        if used and any(self._added(folder) for folder in used):
            return False
        return not (self.fresh and _ipc_objects())

    def finish(self):
        clean = self.teardown() and self.clear_state()
        self._close_group()
        conn, code = self.conn, self.status
        assert conn is not None  # only a served command finishes
        self.conn, self.pid, self.status = None, None, None
        self.selector.unregister(conn)
        self.selector.register(self.listener, selectors.EVENT_READ)
        try:
            stats = os.statvfs("/workspace")
            free = stats.f_bavail * stats.f_frsize
        except OSError:
            free = -1
        with contextlib.suppress(OSError):
            reply = {
                "exit": code, "workspace_free": free, "reset": not clean,
                "ended_by": self.ended_by,
            }  # fmt: skip
            conn.sendall(json.dumps(reply).encode() + b"\n")
        conn.close()


def main():
    if len(sys.argv) < 4:
        _refuse("usage: cmdserver SOCKET SECCOMP_FILE HOST_PIDNS [FRESH_FOLDER ...]")
    check_own_namespace(sys.argv[3])
    program = b""
    if sys.argv[2] and os.path.exists(sys.argv[2]):
        with open(sys.argv[2], "rb") as file:
            program = file.read()
    confine_self(program)
    server = Server(sys.argv[1], sys.argv[4:])
    if sys.argv[1].startswith("fd:"):  # the host waits for this line before the first command
        os.write(1, b"ready\n")
    server.serve()


if __name__ == "__main__":
    main()
