"""Attacks on what one call could leave to the next: SysV IPC, the keyring, memory spread over processes,
inode floods, new user namespaces. Each runs on ``bwrap`` and, where an engine runs, on ``docker``.
"""

from __future__ import annotations

import struct
import time

import pytest

from agentgym.sandbox import Limits, make_sandbox
from agentgym.sandbox.pool import SandboxPool
from agentgym.sandbox.seccomp import call_filter
from helpers.gates import requires_docker

LIMITS = Limits(timeout_s=10, memory_mb=256, max_processes=32, disk_mb=16, max_files=2_000)

BACKENDS = [pytest.param("bwrap", id="bwrap"),
            pytest.param("docker", id="docker", marks=[pytest.mark.docker, requires_docker])]

LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"

# Call 1 of the shm attacks: a segment under a fixed key, written and detached, and a semaphore and a message
# queue; each prints its id so the test knows they were made.
MAKE_SYSV = LIBC + (
    "libc.shmat.restype = ctypes.c_void_p\n"
    "shm = libc.shmget(0x5EC7E7, 1 << 20, 0o1666)\n"
    "addr = libc.shmat(shm, None, 0)\n"
    "ctypes.memmove(addr, b'episode-A-secret', 16)\n"
    "libc.shmdt(ctypes.c_void_p(addr))\n"
    "print('shm', shm, 'sem', libc.semget(0x5E3, 1, 0o1666), 'msg', libc.msgget(0x3E5, 0o1666))\n"
    "try:\n"
    "    open('/dev/shm/posix-secret', 'w').write('episode-A-secret')\n"
    "except OSError:\n"
    "    pass\n"
)
# Call 2: everything call 1 made must be gone.
READ_SYSV = LIBC + (
    "libc.shmat.restype = ctypes.c_void_p\n"
    "shm = libc.shmget(0x5EC7E7, 0, 0)\n"
    "if shm >= 0:\n"
    "    print('LEAK', ctypes.string_at(libc.shmat(shm, None, 0), 16))\n"
    "for kind in ('shm', 'sem', 'msg'):\n"
    "    print(kind, len(open(f'/proc/sysvipc/{kind}').read().splitlines()) - 1)\n"
    "print('posix', os.path.exists('/dev/shm/posix-secret'))\n"
)


@pytest.fixture(params=BACKENDS, scope="module")
def backend(request):
    return request.param


@pytest.fixture(scope="module")
def sandbox(backend):
    with make_sandbox(backend, limits=LIMITS) as sb:
        yield sb


def made_sysv(result) -> None:
    words = result.stdout.split()
    assert result.ok and words[0] == "shm", result
    assert all(int(n) >= 0 for n in words[1::2]), result  # shm, sem and msg were created


def test_sysv_ipc_does_not_outlive_the_call(sandbox):
    made_sysv(sandbox.run(MAKE_SYSV))
    result = sandbox.run(READ_SYSV)
    assert "LEAK" not in result.stdout, result
    assert result.stdout.splitlines()[:3] == ["shm 0", "sem 0", "msg 0"], result


def test_pooled_sandbox_passes_no_shared_memory_to_the_next_episode(backend):
    pool = SandboxPool(backend, size=1, limits=LIMITS)
    try:
        made_sysv(pool.run(MAKE_SYSV))  # episode A
        result = pool.run(READ_SYSV)  # another env's episode, on the same pooled sandbox
    finally:
        pool.close()
    assert "LEAK" not in result.stdout, result
    assert result.stdout.splitlines() == ["shm 0", "sem 0", "msg 0", "posix False"], result


def test_shared_memory_counts_against_the_memory_limit(sandbox):
    # Three 200 MB segments, each touched and detached: no process maps them, so RLIMIT_AS never sees them.
    code = LIBC + (
        "libc.shmat.restype = ctypes.c_void_p\n"
        "size = 200 << 20\n"
        "for i in range(3):\n"
        "    shm = libc.shmget(0x1000 + i, size, 0o1600)\n"
        "    if shm < 0:\n"
        "        print('refused', i, ctypes.get_errno()); break\n"
        "    addr = libc.shmat(shm, None, 0)\n"
        "    ctypes.memset(addr, 1, size)\n"
        "    libc.shmdt(ctypes.c_void_p(addr))\n"
        "    print('made', i, flush=True)\n"
        "import time; time.sleep(1)\n"
        "print('kept all')\n"
    )
    result = sandbox.run(code)
    assert "kept all" not in result.stdout, result
    assert result.oom and "memory limit" in result.stderr, result
    after = sandbox.run("print(len(open('/proc/sysvipc/shm').read().splitlines()) - 1)")
    assert after.stdout == "0\n", after


def _four_children_of_150_mb(first: str = "pass", hold_s: float = 3) -> str:
    """Code that forks four children, each running ``first`` and then holding 150 MB for ``hold_s``."""
    return ("import os, time\n"
            "for _ in range(4):\n"
            "    if os.fork() == 0:\n"
            f"        {first}\n"
            "        block = bytearray(150 << 20)\n"
            f"        time.sleep({hold_s})\n"
            "        os._exit(0)\n"
            "for _ in range(4):\n"
            "    os.wait()\n"
            "print('all four held their memory')\n")


def test_memory_limit_binds_all_processes_of_a_call_together(sandbox):
    # Four processes of 150 MB each: every one is under memory_mb=256, together they are far over it.
    start = time.monotonic()
    result = sandbox.run(_four_children_of_150_mb(hold_s=60), timeout_s=120)
    assert "all four" not in result.stdout, result
    assert result.oom and result.exit_code != 0, result
    assert "over its memory limit of 256 MB" in result.stderr, result
    assert time.monotonic() - start < 15, "stopped when it went over, not at the end (60 s)"
    # Shared (copy-on-write) pages are not counted once per process: a parent's 150 MB seen by 3 children is fine.
    shared = sandbox.run("import os\nblock = bytearray(150 << 20)\nfor _ in range(3):\n    if os.fork() == 0:\n"
                         "        import time; time.sleep(1); os._exit(0)\nfor _ in range(3):\n    os.wait()\n"
                         "print('ok')\n")
    assert shared.ok and shared.stdout == "ok\n", shared
    assert sandbox.run("print(1)").stdout == "1\n"


def test_processes_that_hide_their_memory_map_are_still_counted(sandbox):
    # Not dumpable: the supervisor cannot read their PSS, so it must fall back to their RSS, not skip them.
    result = sandbox.run(LIBC + _four_children_of_150_mb(first="libc.prctl(4, 0, 0, 0, 0)"))  # PR_SET_DUMPABLE 0
    assert "all four" not in result.stdout, result
    assert result.oom and "over its memory limit" in result.stderr, result


ADD_KEY = LIBC + (
    "serial = libc.syscall(248, b'user', b'agentgym-secret', b'episode-A', 9, -4)\n"  # add_key to @u
    "print('added' if serial > 0 else f'denied {ctypes.get_errno()}')\n"
)
FIND_KEY = LIBC + (
    "serial = libc.syscall(249, b'user', b'agentgym-secret', None, 0)\n"  # request_key
    "print('FOUND' if serial > 0 else f'absent {ctypes.get_errno()}')\n"
)


def test_keyring_does_not_carry_between_calls(sandbox):
    first = sandbox.run(ADD_KEY)
    second = sandbox.run(FIND_KEY)
    assert first.ok and second.ok, (first, second)
    assert "FOUND" not in second.stdout, second
    assert first.stdout.startswith("denied"), first  # the keyring syscalls are refused outright


def test_inode_flood_stops_at_the_file_limit_and_wipes_fast(sandbox):
    code = ("import os\nmade = 0\ntry:\n    for i in range(200_000):\n        os.mkdir(f'd{i}')\n"
            "        made += 1\nexcept OSError as e:\n    print('stopped', e.errno, made)\n"
            "else:\n    print('made all', made)\n")
    result = sandbox.run(code, timeout_s=60)
    assert result.stdout.startswith("stopped 28 "), result  # ENOSPC
    assert int(result.stdout.split()[-1]) <= LIMITS.max_files
    assert result.duration_s < 25, result  # ~1-5 s; room for a machine 5x slower
    start = time.monotonic()
    sandbox.reset()
    assert time.monotonic() - start < 10
    assert sandbox.run("import os; print(len(os.listdir('.')))").stdout == "0\n"


@pytest.mark.parametrize("flags", [0x10000000, 0x10000000 | 0x20000], ids=["user", "user+mount"])
def test_no_new_user_namespace(sandbox, flags):
    code = LIBC + (
        f"print('unshare', libc.unshare({flags}), ctypes.get_errno())\n"
        # raw clone(CLONE_NEWUSER | SIGCHLD): a child that exits at once
        f"pid = libc.syscall(56, {flags} | 17, 0, 0, 0, 0)\n"
        "if pid == 0:\n    os._exit(0)\n"
        "if pid > 0:\n    os.waitpid(pid, 0)\n"
        "print('clone', min(pid, 1), ctypes.get_errno())\n"
    )
    result = sandbox.run(code)
    assert result.ok, result
    assert result.stdout.split("\n")[:2] == ["unshare -1 1", "clone -1 1"], result  # EPERM both ways


def test_threads_and_subprocesses_still_work(sandbox):
    # clone3 is refused with ENOSYS: libc must fall back to clone for threads and posix_spawn.
    code = ("import subprocess, threading\nseen = []\nthreads = [threading.Thread(target=seen.append, args=(i,))"
            " for i in range(4)]\nfor t in threads:\n    t.start()\nfor t in threads:\n    t.join()\n"
            "print(sorted(seen), subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())\n")
    result = sandbox.run(code)
    assert result.ok and result.stdout == "[0, 1, 2, 3] child\n", result


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_seccomp_filter_is_well_formed(machine):
    program = call_filter(machine)
    steps = [struct.unpack("=HBBI", program[at:at + 8]) for at in range(0, len(program), 8)]
    assert len(program) % 8 == 0 and 8 < len(steps) < 64
    assert steps[0] == (0x20, 0, 0, 4)  # first, load the architecture
    for at, (code, jt, jf, _) in enumerate(steps):
        if code & 0x07 == 0x05:  # a jump lands inside the program
            assert at + 1 + max(jt, jf) < len(steps)
    assert steps[-1][0] == 0x06  # it ends in a return
    assert call_filter("riscv64") == b""  # unknown: no filter rather than a wrong one
