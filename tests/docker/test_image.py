"""The server image: builds from a local base with no network, serves an episode over HTTP.

Needs a Docker engine (``DOCKER_HOST``) and a base image with python3 + venv
(``AGENTGYM_DOCKER_BASE``, default ``agentgym-base:bookworm``); ``.ci/run`` makes both.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import agentgym
from agentgym.client import RemoteEnv
from helpers.gates import requires_docker
from helpers.server_process import free_port

ROOT = Path(__file__).resolve().parents[2]
BASE = os.environ.get("AGENTGYM_DOCKER_BASE", "agentgym-base:bookworm")
TAG = "agentgym-server:test"


def run(*cmd: str, timeout: int = 600) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def image():
    wheels = ROOT / "docker" / "wheels"  # pip runs here, where the registry is reachable; the build is offline
    run(sys.executable, "-m", "pip", "download", "-q", "-d", str(wheels), "setuptools>=77", "wheel")
    run(sys.executable, "-m", "pip", "wheel", "-q", "-w", str(wheels), ".[server]")
    run("docker", "build", "-q", "--network", "none", "--build-arg", f"BASE_IMAGE={BASE}",
        "--build-arg", "PIP_INSTALL_ARGS=--no-index --find-links /src/docker/wheels",
        "-f", "docker/Dockerfile", "-t", TAG, ".")
    return TAG


@pytest.mark.docker
@requires_docker
def test_image_serves_an_episode(image):
    port = free_port()
    container = run("docker", "run", "-d", "--network", "host", "-e", "AGENTGYM_TOKEN=ci-token", image,
                    "agentgym", "serve", "--host", "0.0.0.0", "--port", str(port)).strip()
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, run("docker", "logs", container)
                time.sleep(0.2)
        assert httpx.get(f"{url}/v1/envs").status_code == 401  # public bind: token enforced
        env = RemoteEnv("agentgym/SearchQA-v0", url, token="ci-token")
        oracle = agentgym.make("agentgym/SearchQA-v0").unwrapped
        obs, _ = env.reset(seed=11)
        assert obs == oracle.reset(seed=11)[0]
        while True:
            action = oracle.oracle_action()
            oracle.step(action)
            _, reward, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
        assert reward == 1.0
        env.close()
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=60)
