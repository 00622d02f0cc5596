"""RemoteEnv against a real ``agentgym serve`` process: the same conformance checks as the local env."""

import asyncio
import subprocess
import sys

import gymnasium as gym
import httpx
import pytest

import agentgym
from agentgym.envs import ENVS
from agentgym.client import AsyncRemoteEnv, RemoteEnv
from agentgym.errors import ConfigError, RemoteEnvError
from helpers.gates import env_params
from helpers.conformance import conformance
from helpers.server_process import serving


@pytest.fixture(scope="module")
def url():
    with serving() as base:
        yield base


@pytest.mark.parametrize("env_id", env_params(info.id for info in ENVS))
@pytest.mark.parametrize("seed", [0, 7])
def test_local_and_remote_agree_observation_for_observation(url, env_id, seed):
    # after the 2 bad actions: a purchase takes up to ~8 actions, an ALFWorld plan up to ~15 commands
    max_turns = 12 if "WebShop" in env_id else 20 if "ALFWorld" in env_id else 6
    local = gym.make(env_id, max_turns=max_turns)
    remote = gym.make(env_id, remote=url, max_turns=max_turns)
    assert isinstance(remote.unwrapped, RemoteEnv)
    try:
        assert conformance(local, env_id, seed=seed) == conformance(remote, env_id, seed=seed)
    finally:
        remote.close()
        local.close()


def test_remote_session_is_closed_on_close(url):
    env = RemoteEnv("agentgym/SearchQA-v0", url)
    env.reset(seed=0)
    sid = env.session_id
    env.close()
    gone = httpx.post(f"{url}/v1/sessions/{sid}/step", json={"action": "x"})
    assert gone.status_code == 404


def test_remote_errors_are_remote_env_errors(url):
    with pytest.raises(RemoteEnvError) as info:
        RemoteEnv("agentgym/SearchQA-v0", url, env_kwargs={"corpus": "/etc/shadow"}).reset()
    assert info.value.status_code == 422 and info.value.code == "invalid_kwargs"
    with pytest.raises(RemoteEnvError) as info:
        RemoteEnv("agentgym/SearchQA-v0", "http://127.0.0.1:9", retries=1).reset()
    assert info.value.code == "connection_error" and "after 2 tries" in str(info.value)


@pytest.mark.parametrize("action", [5, 3.5, None, True, float("nan"), b"<answer>Lima</answer>", {"a", "b"},
                                    ({"name": "search", "arguments": {"query": "Lima"}},)])
def test_any_action_gets_the_same_observation_locally_and_remotely(url, action):
    local = gym.make("agentgym/SearchQA-v0")
    remote = gym.make("agentgym/SearchQA-v0", remote=url)
    try:
        local.reset(seed=4)
        remote.reset(seed=4)
        assert remote.step(action) == local.step(action)
    finally:
        remote.close()
        local.close()


def test_bad_kwargs_are_the_error_make_gives(url):
    with pytest.raises(ConfigError) as made:
        gym.make("agentgym/SearchQA-v0", topk="3")
    with pytest.raises(RemoteEnvError) as remote:
        RemoteEnv("agentgym/SearchQA-v0", url, env_kwargs={"topk": "3"}).reset()
    assert remote.value.status_code == 422 and remote.value.code == "invalid_kwargs"
    assert str(remote.value) == f"[422 invalid_kwargs] {made.value}"


class DropFirstStepResponse(httpx.HTTPTransport):
    """Delivers the first step request to the server, then loses the response (as a flaky network does)."""

    dropped = 0

    def handle_request(self, request):
        response = super().handle_request(request)
        if request.url.path.endswith("/step") and not self.dropped:
            self.dropped += 1
            response.close()
            raise httpx.ReadError("connection reset", request=request)
        return response


def test_retry_after_a_lost_response_never_steps_twice(url):
    transport = DropFirstStepResponse()
    env = RemoteEnv("agentgym/SearchQA-v0", url, transport=transport)
    env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step("<search>Lima</search>")
    assert transport.dropped == 1 and info["turn"] == 1  # the retry got the recorded step, not a second one
    assert env.step("<search>Peru</search>")[4]["turn"] == 2
    env.close()


def test_async_remote_env_runs_episodes_concurrently(url):
    async def episode(i: int) -> float:
        env = AsyncRemoteEnv("agentgym/SearchQA-v0", url)
        oracle = agentgym.make("agentgym/SearchQA-v0").unwrapped
        await env.reset(seed=i)
        oracle.reset(seed=i)
        try:
            while True:
                action = oracle.oracle_action()
                oracle.step(action)
                _, reward, terminated, truncated, _ = await env.step(action)
                if terminated or truncated:
                    return reward
        finally:
            await env.close()

    async def main():
        return await asyncio.gather(*(episode(i) for i in range(8)))

    assert asyncio.run(main()) == [1.0] * 8


def test_agentgym_protocol_client_plays_to_the_end(url):
    """A client written from AgentGym's documented env-server protocol, pointed at the compat prefix."""
    base = f"{url}/agentgym/SearchQA-v0"
    oracle = agentgym.make("agentgym/SearchQA-v0").unwrapped
    assert httpx.get(f"{base}/").json() == "This is environment agentgym/SearchQA-v0."
    env_id = httpx.post(f"{base}/create").json()["id"]
    reset = httpx.post(f"{base}/reset", json={"id": env_id, "data_idx": 4}).json()
    prompt, _ = oracle.reset(options={"index": 4})
    assert reset["observation"] == prompt and reset["info"]["task_id"] == oracle.task.id and not reset["done"]
    assert httpx.get(f"{base}/observation", params={"id": env_id}).json()["observation"] == reset["observation"]
    done, reward = False, 0.0
    while not done:
        action = oracle.oracle_action()
        oracle.step(action)
        result = httpx.post(f"{base}/step", json={"id": env_id, "action": action}).json()
        done, reward = result["done"], result["reward"]
    assert reward == 1.0
    assert httpx.post(f"{base}/close", json={"id": env_id}).json() == {"closed": True}
    assert httpx.post(f"{base}/step", json={"id": env_id, "action": "x"}).status_code == 404


def test_serve_refuses_a_public_bind_without_a_token():
    proc = subprocess.run([sys.executable, "-m", "agentgym.cli", "serve", "--host", "0.0.0.0", "--port", "1"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "without a token" in proc.stderr


def test_token_over_a_real_socket():
    with serving(token="t0ken") as base:
        assert httpx.get(f"{base}/v1/envs").status_code == 401
        env = RemoteEnv("agentgym/SearchQA-v0", base, token="t0ken")
        assert env.reset(seed=1)[0].startswith("Answer the question")
        env.close()
