"""``check_env`` on an env in process and on a ``RemoteEnv`` through a real server in this process."""

import contextlib
import socket
import threading
import time

import gymnasium as gym
import pytest
import uvicorn

import agentgym
from agentgym.client import RemoteEnv
from agentgym.errors import EnvCheckFailed
from agentgym.server import create_app

SEARCH = "agentgym/SearchQA-v0"


@contextlib.contextmanager
def serving_in_thread(app):
    """uvicorn on a free port in a thread of this process (a real socket, the real app and lifespan)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.fixture(scope="module")
def url():
    with serving_in_thread(create_app([SEARCH])) as base:
        yield base


def test_check_env_in_process():
    report = agentgym.check_env(gym.make(SEARCH, topk=2), n_tasks=2)
    assert len(report["oracle_solved"]) == 2 and report["split"] == "test"


def test_check_env_accepts_a_remote_env(url):
    remote = gym.make(SEARCH, remote=url, topk=2)
    try:
        report = agentgym.check_env(remote, n_tasks=2)
    finally:
        remote.close()
    local = agentgym.check_env(gym.make(SEARCH, topk=2), n_tasks=2)
    assert report == local


def test_check_env_on_a_server_with_other_data_says_so():
    # the operator serves only comparison questions: the local shadow's tasks are not the server's
    app = create_app([SEARCH], server_kwargs={SEARCH: {"question_types": ["comparison"]}})
    with serving_in_thread(app) as base:
        env = RemoteEnv(SEARCH, base)
        try:
            with pytest.raises(EnvCheckFailed, match="diverged"):
                agentgym.check_env(env, n_tasks=1, skip_gym_checker=True)
        finally:
            env.close()


def test_check_env_rejects_other_envs():
    with pytest.raises(EnvCheckFailed, match="expected an AgentEnv or a RemoteEnv, got CartPoleEnv"):
        agentgym.check_env(gym.make("CartPole-v1"))


def test_an_env_class_names_how_many_tasks_its_check_plays(monkeypatch):
    """``check_env`` without ``n_tasks`` plays the env class's ``check_tasks`` (WebShopBrowser: 20, its episodes
    drive Chromium), else every task up to 100; ``n_tasks`` still wins."""
    from agentgym.envs.search.env import SearchQAEnv
    from agentgym.envs.webshop.browser import WebShopBrowserEnv

    assert WebShopBrowserEnv.check_tasks == 20 and SearchQAEnv.check_tasks is None
    monkeypatch.setattr(SearchQAEnv, "check_tasks", 3)
    assert len(agentgym.check_env(gym.make(SEARCH, topk=2))["oracle_solved"]) == 3
    assert len(agentgym.check_env(gym.make(SEARCH, topk=2), n_tasks=2)["oracle_solved"]) == 2
