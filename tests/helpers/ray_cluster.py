"""A real Ray cluster of two nodes on this machine, started by a test with ``ray start`` (head, then a second node
joining it, each with resources of its own), stopped by killing the two ``ray start --block`` processes."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from helpers.server_process import free_port

# no token authentication between this machine's own processes (Ray >= 2.5x enables it for `ray start`)
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "OMP_NUM_THREADS": "1"}
# the nodes stop at once on SIGTERM: Ray >= 2.5x first asks the GCS to drain the node, for up to 30 s, but the head's
# GCS takes the same SIGTERM (one process group), so each node waited out the whole 30 s (no Serve replicas here to
# move off a node before it goes)
NODE_ENV = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}


@dataclass
class Cluster:
    address: str  # HOST:PORT of the head's GCS, what `ray start --head` prints
    nodes: dict[str, str]  # node name ("head", "second") -> Ray node id


def _ray_command() -> list[str]:
    # Ray's CLI run as a module of this Python: a console script may be missing (CI's Python came with a Ray
    # installed without its scripts, which pip then left as it was) or belong to another Python on PATH
    return [sys.executable, "-m", "ray.scripts.scripts"]


def _start(args: list[str], log: Path) -> subprocess.Popen:
    # the nodes' workers import test envs (helpers.crashy_env) as a node of a real cluster imports the operator's
    tests = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
    with open(log, "w") as out:
        return subprocess.Popen([*_ray_command(), "start", "--block", "--disable-usage-stats", *args],
                                env={**os.environ, **RAY_ENV, **NODE_ENV, "PYTHONPATH": path}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _node_ids(address: str, names: list[str], timeout_s: float) -> dict[str, str]:
    """Node name -> Ray node id, each node found by its own resource (``node_<name>``), once all have joined."""
    # one driver watches the nodes join (a driver's start costs seconds of CPU); another is started only if one
    # failed, e.g. to connect while the head was still starting
    script = ("import json, sys, time, ray\n"
              "ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)\n"
              "deadline = time.monotonic() + float(sys.argv[2])\n"
              "while True:\n"
              "    found = {k[5:]: n['NodeID'] for n in ray.nodes() if n['Alive'] for k in n['Resources']\n"
              "             if k.startswith('node_') and not k.startswith('node:')}\n"
              "    if set(sys.argv[3:]) <= set(found) or time.monotonic() > deadline:\n"
              "        print(json.dumps(found))\n"
              "        break\n"
              "    time.sleep(0.2)\n")
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        left = deadline - time.monotonic()
        done = subprocess.run([sys.executable, "-c", script, address, str(left), *names],
                              env={**os.environ, **RAY_ENV}, capture_output=True, text=True, timeout=left + 60)
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
        if done.returncode == 0:
            import json

            found = json.loads(last)
            if set(names) <= set(found):
                return found
        time.sleep(1)
    raise RuntimeError(f"the Ray cluster did not come up with nodes {names}: {last}")


def _listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def two_node_cluster(cpus_per_node: int = 1, timeout_s: float = 120.0) -> Iterator[Cluster]:
    """A head and a second node, each with ``cpus_per_node`` CPUs and a resource naming it (``node_head``,
    ``node_second``)."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    logs = Path(tempfile.mkdtemp(prefix="agentgym-ray-"))
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", str(cpus_per_node)]
    procs = [_start(["--head", "--port", str(port), "--include-dashboard", "false", *common,
                     "--resources", '{"node_head": 1}'], logs / "head.log")]
    try:
        deadline = time.monotonic() + timeout_s
        # the second node joins once the head's GCS listens (it retries its connection while the GCS starts up),
        # the rest of the head starting meanwhile; _node_ids waits for both to be up
        while not _listening(port):
            if procs[0].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start --head failed: {(logs / 'head.log').read_text()[-3000:]}")
            time.sleep(0.2)
        procs.append(_start(["--address", address, *common, "--resources", '{"node_second": 1}'],
                            logs / "second.log"))
        yield Cluster(address, _node_ids(address, ["head", "second"], timeout_s))
    finally:
        for proc in reversed(procs):  # --block: SIGTERM stops the node's own processes
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(logs, ignore_errors=True)
        _forget(port)


def _forget(port: int) -> None:
    """Remove what `ray start --head` left for later drivers: a plain ``ray.init()`` would try to join this gone
    cluster (and refuse ``num_cpus=``) instead of starting its own."""
    try:
        from ray._common.utils import get_ray_address_file

        marker = Path(get_ray_address_file(None))
    except ImportError:  # where older Rays keep it
        marker = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    with contextlib.suppress(OSError):
        if marker.read_text().strip().endswith(f":{port}"):
            marker.unlink()
