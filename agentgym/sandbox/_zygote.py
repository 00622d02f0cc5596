"""The supervisor that runs inside a sandbox and forks one child per call.

It is started once per sandbox (inside bubblewrap, or as a plain process for the
``local`` backend), optionally imports heavy modules once (``preload``), and then
answers requests on fds 0/1, framed as a 4-byte big-endian length and a JSON body.
For each ``run`` request it forks a child that drops to the untrusted uid, loses
every capability, sets rlimits, writes the request's files and then either
``exec``s a command or runs Python code in the forked interpreter (no new
interpreter start: this is what makes a call cost about a fork). The supervisor
enforces the wall-clock limit, the call's total memory (its processes' PSS
plus SysV shared memory, sampled every few milliseconds) and the output cap,
and afterwards kills every process the call left behind and removes the IPC
objects it created (SysV shared memory, semaphores and message queues, POSIX
message queues), checking that none is left. Each call runs under the seccomp
filter the host compiled (``seccomp.py``). Where the host asks for it
(``tmpfs``), the supervisor mounts the writable directories itself, with a size
and an inode limit, and then drops ``CAP_SYS_ADMIN``; where it asks for
``layers``, the supervisor first mounts the Python installation where calls
will find it and starts again from there (``_mount_python_layers``).

This file is read as source and passed to ``python -c``: it must import nothing
from agentgym and keep to the standard library.
"""

import builtins
import ctypes
import json
import linecache
import os
import resource
import select
import signal
import struct
import sys
import time
import traceback
import types

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_CAP_SYS_ADMIN = 21
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_MOVE = 1, 2, 4, 8192
_MNT_DETACH = 2
_MQUEUE = "/dev/mqueue"  # the IPC namespace's POSIX message queues, one file each
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_IPC_RMID = 0
_LAST_CAP = 63
_MEMORY_POLL_S = 0.02
_PAGE = os.sysconf("SC_PAGE_SIZE")
_OOM_MARKERS = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc", b"out of memory")
_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_seccomp = {}


def _load_seccomp(hex_program):
    """Keep the compiled filter in memory for every child to install (fork copies it)."""
    program = bytes.fromhex(hex_program or "")
    if program:
        _seccomp["buffer"] = ctypes.create_string_buffer(program, len(program))
        _seccomp["prog"] = _SockFprog(len(program) // 8, ctypes.addressof(_seccomp["buffer"]))


def _install_seccomp():
    if "prog" in _seccomp and _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER,
                                          ctypes.byref(_seccomp["prog"]), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def _mount_tmpfs(mounts):
    """Mount each size- and inode-capped tmpfs, then give up CAP_SYS_ADMIN for good."""
    for path, options in mounts.items():
        if _libc.mount(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode()) != 0:
            raise OSError(ctypes.get_errno(), f"mount tmpfs on {path} failed")
    _libc.prctl(_PR_CAPBSET_DROP, _CAP_SYS_ADMIN, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    if _libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    keep = ~(1 << _CAP_SYS_ADMIN) & 0xFFFFFFFF
    data[0].effective &= keep
    data[0].permitted &= keep
    data[0].inheritable &= keep
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _mount_python_layers(cfg):
    """Mount the Python installation at its place for good, then start this supervisor again from there.

    bubblewrap bound each Python root under ``stage`` (named ``0``, ``1``, ...), and this process started from
    there. Each root becomes a read-only overlay at its place (``layers``: place -> staged name), with its
    lower layers named relative to ``stage``: a plain bind would name the root's host path in every
    ``/proc/<pid>/mountinfo``, and the overlay's options show only ``lowerdir=0:empty``. The staged binds are
    then detached, and the supervisor is executed afresh from the overlay (``python``), with the same source.
    Where an overlay cannot be mounted (one stacked on overlays too deep), the bind itself moves to the place.
    """
    os.chdir(cfg["stage"])
    for place, staged in cfg["layers"].items():
        options = f"lowerdir={staged}:empty".encode()
        flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV
        if _libc.mount(b"overlay", place.encode(), b"overlay", flags, options) == 0:
            if _libc.umount2(staged.encode(), _MNT_DETACH) != 0:
                raise OSError(ctypes.get_errno(), f"detaching the staged Python layer {staged} failed")
        elif _libc.mount(staged.encode(), place.encode(), None, _MS_MOVE, None) != 0:
            raise OSError(ctypes.get_errno(), f"mounting the Python layer at {place} failed")
    os.chdir("/")
    with open("/proc/self/cmdline", "rb") as fh:
        argv = fh.read().split(b"\0")[:-1]
    source = argv[argv.index(b"-c") + 1]
    later = {k: v for k, v in cfg.items() if k not in ("layers", "stage", "python")}
    python = cfg["python"].encode()
    os.execve(python, [python, b"-I", b"-c", source, json.dumps(later).encode()], os.environ)


def _drop_privileges(uid, gid):
    """Become ``uid``/``gid`` (when given), with no capabilities and no way to regain any."""
    if uid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        for cap in range(_LAST_CAP + 1):
            _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
        os.setresuid(uid, uid, uid)
    else:
        for cap in range(_LAST_CAP + 1):
            _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    _libc.capset(ctypes.byref(header), data)
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def _set_limits(req):
    mb = 1024 * 1024
    cpu = max(1, int(req["cpu_s"] + 0.999))
    limits = [
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_FSIZE, (req["file_size_mb"] * mb,) * 2),
        (resource.RLIMIT_NOFILE, (req["open_files"],) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    if req["memory_mb"]:
        limits.append((resource.RLIMIT_AS, ((req["memory_mb"] + req["as_base_mb"]) * mb,) * 2))
    if req["max_processes"]:
        limits.append((resource.RLIMIT_NPROC, (req["max_processes"] + req["nproc_base"],) * 2))
    for which, value in limits:
        resource.setrlimit(which, value)


def _write_files(files):
    for rel, content in files.items():
        parent = os.path.dirname(rel)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(rel, "wb") as fh:
            fh.write(content.encode("utf-8", "surrogateescape"))


def _run_code(code, argv0):
    """Run ``code`` as ``__main__`` in this (forked) interpreter, as ``python file`` would."""
    filename = argv0
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "__file__": filename})
    sys.modules["__main__"] = main
    sys.argv = [filename]
    sys.path[0:0] = [os.getcwd()]
    sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
    status = 0
    try:
        exec(compile(code, filename, "exec"), main.__dict__)
    except SystemExit as e:
        if e.code is None:
            status = 0
        elif isinstance(e.code, int):
            status = e.code & 0xFF
        else:
            print(e.code, file=sys.stderr)
            status = 1
    except BaseException as e:  # noqa: BLE001 - the program's own error, reported like the interpreter does
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        traceback.print_exception(type(e), e, tb)
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - a closed or broken pipe must not change the exit status
        pass
    return status


def _child(req, fds, cfg):
    stdin_r, out_w, err_w = fds
    try:
        os.setsid()
        os.dup2(stdin_r, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, 65536)
        os.chdir(cfg["workdir"])
        _drop_privileges(cfg["uid"], cfg["gid"])
        # Dumpable, so the supervisor (as this uid, no ptrace capability) can read the call's memory use.
        _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
        _set_limits(req)
        _install_seccomp()
        os.umask(0o022)
        _write_files(req["files"])
        env = req["env"]
        if req["argv"]:
            os.environ.clear()
            os.environ.update(env)
            os.execvpe(req["argv"][0], req["argv"], env)
        os.environ.clear()
        os.environ.update(env)
        os._exit(_run_code(req["code"], req["code_name"]))
    except BaseException as e:  # noqa: BLE001 - anything here is reported on the child's stderr
        try:
            os.write(2, f"sandbox: could not start the program: {type(e).__name__}: {e}\n".encode())
        finally:
            os._exit(127)


def _other_pids():
    me = os.getpid()
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, me):
            pids.append(int(name))
    return pids


def _kill_leftovers(pid, cfg):
    """Kill everything the call started: its process group, and in a pid namespace every other process."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    if not cfg["pidns"]:
        return
    for _ in range(200):
        pids = _other_pids()
        if not pids:
            return
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        _reap()
        time.sleep(0.001)


def _sysv(kind):
    """The SysV IPC objects of this IPC namespace (``shm``, ``sem`` or ``msg``), one dict per object."""
    try:
        with open(f"/proc/sysvipc/{kind}") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    if not lines:
        return []
    names = lines[0].split()
    return [dict(zip(names, line.split())) for line in lines[1:]]


def _as_uid(uid, action):
    """Run ``action`` with the effective and file-system uid of the calls (the objects' owner)."""
    if uid is None:
        return action()
    os.setegid(uid)
    os.seteuid(uid)
    try:
        return action()
    finally:
        os.seteuid(0)
        os.setegid(0)


def _posix_queues():
    try:
        return os.listdir(_MQUEUE)
    except OSError:
        return []


def _remove_ipc(cfg):
    """Remove every IPC object the call created, and say what is left (nothing, or the sandbox is replaced).

    SysV shared memory, semaphores and message queues, and POSIX message queues, live in the IPC namespace,
    which the sandbox's calls share: they would outlive the call, uncounted, for the next one.
    """
    found = [(kind, int(entry[key])) for kind, key in (("shm", "shmid"), ("sem", "semid"), ("msg", "msqid"))
             for entry in _sysv(kind)]
    queues = _posix_queues()
    if not found and not queues:
        return []

    def remove():
        for name in queues:
            try:
                os.unlink(os.path.join(_MQUEUE, name))
            except OSError:
                pass  # reported below, as left
        for kind, ident in found:
            if kind == "shm":
                _libc.shmctl(ident, _IPC_RMID, None)
            elif kind == "sem":
                _libc.semctl(ident, 0, _IPC_RMID)
            else:
                _libc.msgctl(ident, _IPC_RMID, None)

    _as_uid(cfg["uid"], remove)
    left = [f"SysV {kind}" for kind in ("shm", "sem", "msg") if _sysv(kind)]
    return left + [f"POSIX queue {name}" for name in _posix_queues()]


def _rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0  # exited meanwhile


def _pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except PermissionError:
        pass  # made itself undumpable: charged its whole RSS
    except (OSError, ValueError, IndexError):
        return 0
    return _rss(pid)


def _call_memory(pids, precise):
    """Bytes the call holds: its processes' resident memory (``precise``: PSS, else an RSS upper bound),
    plus SysV shared memory no process maps and queued SysV messages."""
    total = sum(_pss(pid) if precise else _rss(pid) for pid in pids)
    for segment in _sysv("shm"):
        if not precise or segment.get("nattch") == "0":
            total += int(segment.get("rss", segment["size"]))
    total += sum(int(queue["cbytes"]) for queue in _sysv("msg"))
    return total


_reaped = {}


def _reap():
    """Collect every exited child; statuses are kept for ``_wait``."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _reaped[pid] = status


def _wait(pid, block):
    """The status of child ``pid`` if it has exited (waiting for it when ``block``), else None."""
    if pid in _reaped:
        return _reaped.pop(pid)
    try:
        done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        return _reaped.pop(pid, None)
    return status if done else None


class _Call:
    """One call: the forked child, its three pipes, and the supervisor's side of the limits."""

    def __init__(self, req, cfg, ctl_in):
        self.cfg = cfg
        self.start = time.monotonic()
        self.deadline = self.start + req["timeout_s"]
        self.memory_limit = (req["memory_mb"] + req["rss_base_mb"]) * 1024 * 1024 if cfg["pidns"] else None
        self.next_poll = self.start + _MEMORY_POLL_S
        self.memory_used = 0
        self.rss_base_mb = req["rss_base_mb"]
        self.cap = req["max_output_bytes"]
        stdin_r, stdin_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            for fd in (stdin_w, out_r, err_r):
                os.close(fd)
            _child(req, (stdin_r, out_w, err_w), cfg)
        for fd in (stdin_r, out_w, err_w):
            os.close(fd)
        self.out, self.err = out_r, err_r
        self.bufs = {out_r: bytearray(), err_r: bytearray()}
        self.seen = {out_r: 0, err_r: 0}
        self.open_fds = {out_r, err_r}
        # stdin is read from the control channel only now, after the fork: the child's memory never held
        # it (a grader's hidden tests travel there), and the buffer is zeroed once written.
        self.stdin = bytearray(req["stdin_size"])
        _read_into(ctl_in, self.stdin)
        self.stdin_view = memoryview(self.stdin)
        self.written = 0
        self.stdin_w = stdin_w
        for fd in (stdin_w, out_r, err_r):
            os.set_blocking(fd, False)
        if not self.stdin:
            self._close_stdin()
        self.status = None
        self.timed_out = self.flooded = self.memory_exceeded = self.files_exceeded = False

    def _close_stdin(self):
        os.close(self.stdin_w)
        self.stdin_w = None

    def _stop(self):
        _kill_leftovers(self.pid, self.cfg)
        self.status = _wait(self.pid, block=True)

    def wait(self):
        """Feed stdin, collect output, enforce the deadline and the output cap, until the call is over."""
        # A pidfd turns readable when the child exits, so one select waits for output, input room and exit.
        pidfd = os.pidfd_open(self.pid)
        while True:
            if self.status is None:
                self.status = _wait(self.pid, block=False)
                if self.status is not None:
                    _kill_leftovers(self.pid, self.cfg)  # closes pipes held by anything it left running
            if self.status is not None and not self.open_fds:
                break
            now = time.monotonic()
            if now >= self.deadline and self.status is None:
                self.timed_out = True
                self._stop()
                continue
            if self.status is None and self.memory_limit is not None and now >= self.next_poll:
                self.next_poll = now + _MEMORY_POLL_S
                self.memory_exceeded = self._over_memory()
                self.files_exceeded = self._too_many_files()
                if self.memory_exceeded or self.files_exceeded:
                    self._stop()
                    continue
            if self.status is not None and now > self.deadline + 2:
                break  # something outside our reach holds a pipe: do not wait for it forever
            if self.status is None:
                wait_s = max(0.0, min(self.deadline, self.next_poll) - now)
            else:
                wait_s = 0.05
            readers = list(self.open_fds) + ([pidfd] if self.status is None else [])
            writers = [self.stdin_w] if self.stdin_w is not None else []
            try:
                readable, writable, _ = select.select(readers, writers, [], wait_s)
            except InterruptedError:
                continue
            if writable:
                self._feed()
            for fd in readable:
                if fd != pidfd:
                    self._drain(fd)
        os.close(pidfd)

    def _over_memory(self):
        """Whether the call's processes and SysV memory together exceed its memory limit (RLIMIT_AS binds
        each process alone). The cheap RSS sum overcounts pages shared between processes; only past the
        limit is the exact PSS read."""
        pids = _other_pids()
        if _call_memory(pids, precise=False) <= self.memory_limit:
            return False
        start = time.monotonic()
        self.memory_used = _as_uid(self.cfg["uid"], lambda: _call_memory(pids, precise=True))
        # Reading PSS walks page tables: never spend more than a fifth of the call's time on it.
        self.next_poll = max(self.next_poll, time.monotonic() + 4 * (time.monotonic() - start))
        return self.memory_used > self.memory_limit

    def _too_many_files(self):
        """Past ``max_files`` in a writable directory (only where its tmpfs has no inode limit of its own)."""
        limit = self.cfg.get("max_files")
        if not limit:
            return None
        for path in (self.cfg["workdir"], "/tmp", "/dev/shm"):
            try:
                stat = os.statvfs(path)
            except OSError:
                continue
            if stat.f_files - stat.f_ffree > limit + 1:  # + the directory itself
                return path
        return None

    def _feed(self):
        try:
            self.written += os.write(self.stdin_w, self.stdin_view[self.written:self.written + 65536])
        except BlockingIOError:
            pass
        except BrokenPipeError:
            self.written = len(self.stdin)  # the program stopped reading its input
        if self.written >= len(self.stdin):
            self._close_stdin()

    def _drain(self, fd):
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.open_fds.discard(fd)
            os.close(fd)
            return
        self.seen[fd] += len(chunk)
        room = self.cap - len(self.bufs[fd])
        if room > 0:
            self.bufs[fd] += chunk[:room]
        # A program that floods its output is stopped: reading it costs the host time.
        if self.seen[fd] > 8 * self.cap and self.status is None:
            self.flooded = True
            self._stop()

    def result(self):
        for fd in list(self.open_fds) + ([self.stdin_w] if self.stdin_w is not None else []):
            os.close(fd)
        _reap()
        _reaped.clear()
        self.stdin_view.release()
        self.stdin[:] = bytes(len(self.stdin))
        status = self.status
        exit_code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if self.memory_exceeded:
            mb = 1024 * 1024
            self.bufs[self.err] += (f"\nsandbox: stopped: the call's processes and shared memory together held "
                                    f"{self.memory_used // mb - self.rss_base_mb} MB, over its memory limit of "
                                    f"{self.memory_limit // mb - self.rss_base_mb} MB\n").encode()
        if self.files_exceeded:
            self.bufs[self.err] += (f"\nsandbox: stopped: more than {self.cfg['max_files']} files and directories "
                                    f"in {self.files_exceeded}\n").encode()
        err_tail = bytes(self.bufs[self.err][-4096:])
        return {
            "stdout": self.bufs[self.out].decode("utf-8", "replace"),
            "stderr": self.bufs[self.err].decode("utf-8", "replace"),
            "exit_code": exit_code,
            "timed_out": self.timed_out or exit_code == -signal.SIGXCPU,
            "oom": self.memory_exceeded or any(m in err_tail for m in _OOM_MARKERS),
            "output_truncated": self.seen[self.out] > self.cap or self.seen[self.err] > self.cap,
            "output_limit_exceeded": self.flooded,
            "duration_s": time.monotonic() - self.start,
        }


def _run(req, cfg, ctl_in):
    call = _Call(req, cfg, ctl_in)
    call.wait()
    left = _remove_ipc(cfg) if cfg["pidns"] else []  # every process of the call is gone: nothing holds them
    reply = call.result()
    if left:
        reply["replace"] = f"IPC objects of the call could not be removed: {', '.join(left)}"
    return reply


def _wipe(cfg):
    """Empty the writable directories; the reply says what could not be removed (the host then replaces the
    sandbox rather than let a file reach the next call)."""
    errors = []
    for root in (cfg["workdir"], "/tmp", "/dev/shm") if cfg["pidns"] else (cfg["workdir"],):
        try:
            _empty(root)
        except OSError as e:
            errors.append(f"{root}: {e}")
    return {"ok": not errors, "error": "; ".join(errors)}


def _empty(root):
    """Remove everything under directory ``root``, however deep.

    Iterative, one directory open at a time, by names relative to it: a tree deeper than the interpreter's
    recursion limit, than the open-file limit or than PATH_MAX is removed like any other. No process of the
    call is left to change the tree meanwhile. ``pending`` holds the subdirectories still to remove at each
    level from ``root`` down to the open one, ``names`` the name of each level below ``root``.
    """
    fd = os.open(root, _DIR_FLAGS)
    try:
        pending = [_unlink_files(fd)]
        names = []
        while True:
            if pending[-1]:
                name = pending[-1].pop()
                child = _open_dir(fd, name)
                os.close(fd)
                fd = child
                names.append(name)
                pending.append(_unlink_files(fd))
            elif names:
                parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = parent
                pending.pop()
                os.rmdir(names.pop(), dir_fd=fd)
            else:
                return
    finally:
        os.close(fd)


def _unlink_files(fd):
    """Unlink everything in directory ``fd`` but its subdirectories; return their names."""
    with os.scandir(fd) as it:
        entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in it]
    subdirs = []
    for name, is_dir in entries:
        if is_dir:
            subdirs.append(name)
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except PermissionError:
            os.fchmod(fd, 0o700)  # without root, the call may have taken its own directory's write bit
            os.unlink(name, dir_fd=fd)
    return subdirs


def _open_dir(fd, name):
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=fd)  # without root, the call may have made it unreadable
        return os.open(name, _DIR_FLAGS, dir_fd=fd)


def _recv(fd):
    header = _read_exact(fd, 4)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    body = _read_exact(fd, size)
    return None if body is None else json.loads(body)


def _read_into(fd, buf):
    view = memoryview(buf)
    got = 0
    while got < len(buf):
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise EOFError("the control channel closed mid-request")
        got += n
    view.release()


def _read_exact(fd, n):
    data = bytearray()
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _send(fd, obj):
    body = json.dumps(obj).encode()
    data = struct.pack(">I", len(body)) + body
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _vm_mb(field="VmSize:"):
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1]) // 1024 + 1
    except OSError:
        pass
    return 0


def main():
    cfg = json.loads(sys.argv[1])
    os.closerange(3, 65536)  # what the launcher passed (bubblewrap's arguments): no call may inherit it
    if cfg.get("layers"):
        _mount_python_layers(cfg)  # does not return: the supervisor starts again, from the mounted layers
    # Keep the control channel off fds 0/1 so no child can inherit it by accident.
    ctl_in = os.dup(0)
    ctl_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    _load_seccomp(cfg.get("seccomp"))
    if cfg.get("tmpfs"):
        _mount_tmpfs(cfg["tmpfs"])
    if cfg["uid"] is not None:
        for path in (cfg["workdir"], "/tmp", "/dev/shm"):
            if os.path.isdir(path):
                os.chown(path, cfg["uid"], cfg["gid"])
                os.chmod(path, 0o755 if path == cfg["workdir"] else 0o1777)
    os.chdir(cfg["workdir"])
    preloaded = []
    for name in cfg["preload"]:
        try:
            __import__(name)
            preloaded.append(name)
        except Exception:  # noqa: BLE001 - a preload is an optimisation; report and go on
            pass
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    _send(ctl_out, {"ready": True, "vm_mb": _vm_mb(), "preloaded": preloaded, "pid": os.getpid()})
    while True:
        req = _recv(ctl_in)
        if req is None:
            return
        op = req.get("op")
        if op == "run":
            forked = req["code"] is not None and not req["argv"]
            req["as_base_mb"] = _vm_mb() if forked else 0
            req["rss_base_mb"] = _vm_mb("VmRSS:") if forked else 0
            reply = _run(req, cfg, ctl_in)
        elif op == "wipe":
            reply = _wipe(cfg)
        else:
            reply = {"error": f"unknown op {op!r}"}
        _send(ctl_out, reply)


if __name__ == "__main__":
    main()
