"""The attack suite: hostile programs are contained with a clear result, and the host keeps working.

Runs on the ``bwrap`` backend and, where an engine runs, on ``docker``.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from agentgym.sandbox import Limits, make_sandbox
from helpers.gates import requires_docker

ROOT = Path(__file__).resolve().parents[2]
LIMITS = Limits(timeout_s=3, memory_mb=256, max_processes=32, disk_mb=16, file_size_mb=8, max_output_bytes=10_000)

BACKENDS = [pytest.param("bwrap", id="bwrap"),
            pytest.param("docker", id="docker", marks=[pytest.mark.docker, requires_docker])]


@pytest.fixture(params=BACKENDS, scope="module")
def sandbox(request):
    with make_sandbox(request.param, limits=LIMITS) as sb:
        yield sb


def assert_still_works(sb):
    result = sb.run("print(sum(range(10)))")
    assert result.ok and result.stdout == "45\n", result


def test_fork_bomb(sandbox):
    result = sandbox.run("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")
    assert result.timed_out or result.exit_code != 0
    assert result.duration_s < LIMITS.timeout_s + 3
    assert_still_works(sandbox)
    # Nothing of the bomb survives the call.
    count = sandbox.run("import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]))")
    assert int(count.stdout) <= 4, count


def test_process_limit_applies(sandbox):
    code = ("import os, time\nn = 0\ntry:\n    for _ in range(500):\n        if os.fork() == 0:\n"
            "            time.sleep(5); os._exit(0)\n        n += 1\nexcept OSError as e:\n    print('blocked', n)\n")
    result = sandbox.run(code)
    assert "blocked" in result.stdout, result
    assert int(result.stdout.split()[-1]) < LIMITS.max_processes
    assert_still_works(sandbox)


@pytest.mark.parametrize("code", [
    "x = bytearray(10 ** 10)",
    "chunks = []\nwhile True:\n    chunks.append(bytearray(10 ** 7))",
], ids=["one-allocation", "gradual"])
def test_memory_bomb(sandbox, code):
    result = sandbox.run(code)
    assert result.exit_code != 0
    assert result.oom, result
    assert_still_works(sandbox)


def test_disk_fill(sandbox):
    code = ("import os\ni = 0\ntry:\n    while True:\n        with open(f'f{i}', 'wb') as fh:\n"
            "            fh.write(b'0' * 4_000_000)\n        i += 1\nexcept OSError as e:\n"
            "    print('stopped', e.errno, i)\n")
    result = sandbox.run(code)
    assert "stopped" in result.stdout, result
    written_mb = int(result.stdout.split()[-1]) * 4
    assert written_mb <= LIMITS.disk_mb
    big = sandbox.run("open('/tmp/big', 'wb').write(b'0' * 20_000_000)")
    assert big.exit_code != 0 and ("File too large" in big.stderr or "No space" in big.stderr), big
    sandbox.reset()
    assert_still_works(sandbox)


def test_infinite_loop(sandbox):
    result = sandbox.run("while True:\n    pass\n")
    assert result.timed_out
    assert LIMITS.timeout_s - 0.5 < result.duration_s < LIMITS.timeout_s + 3
    assert_still_works(sandbox)


def test_sleeping_background_process_does_not_hold_the_call(sandbox):
    code = "import os, time\nif os.fork() == 0:\n    os.setsid(); time.sleep(60)\nprint('parent done')\n"
    result = sandbox.run(code)
    assert result.ok and result.stdout == "parent done\n"
    assert result.duration_s < 2
    count = sandbox.run("import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]))")
    assert int(count.stdout) <= 4, count


def test_stdout_flood(sandbox):
    result = sandbox.run("while True:\n    print('x' * 1000)\n")
    assert result.output_truncated and result.output_limit_exceeded
    assert len(result.stdout) <= LIMITS.max_output_bytes
    assert not result.timed_out
    assert_still_works(sandbox)


@pytest.fixture(scope="module")
def host_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()


def test_no_network(sandbox, host_server):
    port, accepted = host_server
    code = (
        "import socket\n"
        f"for host, port in [('127.0.0.1', {port}), ('1.1.1.1', 80), ('pypi.org', 443)]:\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=1).close(); print('CONNECTED', host)\n"
        "    except OSError as e:\n"
        "        print('blocked', host)\n"
    )
    result = sandbox.run(code)
    assert "CONNECTED" not in result.stdout
    assert result.stdout.count("blocked") == 3, result
    assert not accepted


@pytest.mark.parametrize("path", [str(ROOT / "README.md"), str(ROOT / "pyproject.toml"), str(Path.home() / ".bashrc"),
                                  str(Path(__file__))])
def test_host_files_are_invisible(sandbox, path):
    result = sandbox.run(f"import os\nprint(os.path.exists({path!r}))\nprint(open({path!r}).read()[:50])\n")
    assert result.stdout.startswith("False"), result
    assert result.exit_code != 0


def test_secrets_are_unreadable(sandbox):
    result = sandbox.run("print(open('/etc/shadow').read())")
    assert result.exit_code != 0
    assert "PermissionError" in result.stderr or "FileNotFoundError" in result.stderr, result
    assert "root:" not in result.stdout


def test_sandbox_is_not_the_host(sandbox, tmp_path):
    marker = tmp_path / "host-only"
    marker.write_text("host")
    result = sandbox.run(f"import socket, os\nprint(socket.gethostname())\nprint(os.path.exists({str(marker)!r}))")
    assert result.ok
    hostname, visible = result.stdout.split()
    assert hostname != socket.gethostname()
    assert visible == "False"


def test_host_environment_is_not_leaked(sandbox, monkeypatch):
    monkeypatch.setenv("AGENTGYM_TEST_SECRET", "hunter2")
    result = sandbox.run("import os\nprint(sorted(os.environ))\nprint('hunter2' in str(os.environ))")
    assert result.ok and result.stdout.strip().endswith("False")


@pytest.mark.parametrize("path", ["/usr/evil", "/evil", "/etc/evil", "/proc/sys/kernel/hostname"])
def test_cannot_write_outside(sandbox, path):
    result = sandbox.run(f"open({path!r}, 'w').write('x')")
    assert result.exit_code != 0 and ("Error" in result.stderr), result
    assert not Path(path).exists() or path.startswith("/proc")


def test_cannot_kill_the_supervisor(sandbox):
    code = ("import os, signal\nfor pid in (os.getppid(), 1, -1):\n    try:\n        os.kill(pid, signal.SIGKILL)\n"
            "        print('killed', pid)\n    except OSError as e:\n        print('denied', pid)\n")
    starts = getattr(sandbox, "starts", None)
    result = sandbox.run(code)
    assert "killed 1" not in result.stdout
    assert_still_works(sandbox)
    if starts is not None:
        assert sandbox.starts == starts, "the supervisor was killed and had to restart"


def test_no_privileges(sandbox):
    code = ("import os\nprint(os.getuid() != 0)\ntry:\n    os.setuid(0); print('ROOT')\nexcept OSError:\n    print('no')\n"
            "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n")
    result = sandbox.run(code)
    assert result.stdout.split() == ["True", "no", "0000000000000000"], result


def test_proc_shows_only_the_sandbox(sandbox):
    code = ("import os\npids = [p for p in os.listdir('/proc') if p.isdigit()]\nprint(len(pids))\n"
            "for p in pids:\n    for what in ('environ', 'root/etc/shadow', 'mem'):\n        try:\n"
            "            open(f'/proc/{p}/{what}', 'rb').read(10); print('READ', p, what)\n"
            "        except OSError:\n            pass\n")
    result = sandbox.run(code)
    assert result.ok, result
    lines = result.stdout.split("\n")
    assert int(lines[0]) <= 4  # init, supervisor, this call
    assert not any("READ" in line and "self" not in line and "environ" not in line for line in lines), result
    assert "root/etc/shadow" not in result.stdout


def test_no_process_of_a_call_survives_on_the_host():
    with make_sandbox("bwrap", limits=LIMITS) as sandbox:
        sandbox.run("import os\nfor _ in range(5):\n    if os.fork() == 0:\n        os.setsid()\n"
                    "        import time; time.sleep(30)\n")
        assert sandbox.uid is not None, "CI runs as root: calls get a uid of their own"
        leftovers = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    status = Path(f"/proc/{name}/status").read_text()
                except OSError:
                    continue
                if f"Uid:\t{sandbox.uid}\t" in status:
                    leftovers.append(name)
        assert leftovers == []
