"""AgentGym's own clients, per env family, against a real ``agentgym serve``: episodes, isolation, the sessions gauge,
the server's token carried in the base URL.

AgentGym's client package cannot be installed here, so these classes re-implement its clients: PyPI's
``agentenv`` (0.0.1, the only release) is an empty placeholder (its ``__init__.py`` holds ``__version__`` alone,
yet it requires an unpinned torch and transformers), and AgentGym's own ``agentenv`` 0.2.0 (WooooDyy/AgentGym,
``agentenv/``) is not on the index (it also requires torch, deepspeed and wandb). Each class below is written from
its family's client (``agentenv/agentenv/envs/{searchqa,webshop,alfworld,textcraft}.py``): ``requests``, as they
use it, with the same URLs (``f"{base}/create"``), fields, answer shapes, and (TextCraft's) action filter.
"""

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from helpers.gates import requires_envs
from helpers.server_process import serving

import agentgym

SEARCH, WEBSHOP, ALFWORLD = "agentgym/SearchQA-v0", "agentgym/WebShop-v0", "agentgym/ALFWorld-v0"
TOKEN = "t0ken-for-agentgym-clients"


@pytest.fixture(scope="module")
def url():
    with serving(SEARCH, WEBSHOP, ALFWORLD, "--session-ttl-s", "600") as url:
        yield url


class _Client:
    """What the tests read of every client: its field names, and the env kwargs its sessions play with."""

    task_key, session_key, errors_in_body = "id", "env_idx", False
    env_kwargs: dict[str, Any] = {}  # noqa: RUF012 - read only

    @staticmethod
    def sent(action: str) -> str:
        """What of a model's text the client sends as the action."""
        return action


class SearchQAClient(_Client):
    """SearchQA's client: /create {"id": task} -> a bare int; every body names it env_idx; reset {"id": task}."""

    task_key, errors_in_body = "id", False

    def __init__(self, base: str) -> None:
        self.base = base
        created = requests.post(f"{base}/create", json={"id": 0})
        assert created.status_code == 200
        self.env_id = created.json()

    def post(self, path: str, data: dict[str, Any]) -> requests.Response:
        return requests.post(f"{self.base}/{path}", json={**data, "env_idx": self.env_id})

    def observe(self) -> str:
        return _ok(requests.get(f"{self.base}/observation", params={"env_idx": self.env_id}))

    def reset(self, index: int) -> str:
        return _ok(self.post("reset", {"id": index}))

    def step(self, action: str) -> tuple[str, float, bool]:
        answer = _ok(self.post("step", {"action": action}))
        return answer["observation"], answer["reward"], answer["done"]

    def close(self) -> Any:
        return _ok(self.post("close", {}))


class WebShopClient(SearchQAClient):
    """WebShop's client: /create (no body) -> a bare int; env_idx; reset {"session_id": task} -> [text, null];
    the step's text is "state"; GET /available_actions."""

    task_key = "session_id"

    def __init__(self, base: str) -> None:
        self.base = base
        created = requests.post(f"{base}/create")
        assert created.status_code == 200
        self.env_id = created.json()

    def reset(self, index: int) -> str:
        answer = _ok(self.post("reset", {"session_id": index}))
        assert isinstance(answer, list) and len(answer) == 2 and answer[1] is None
        assert answer[0] == self.observe()  # the client replaces answer[0] with GET /observation
        return answer[0]

    def step(self, action: str) -> tuple[str, float, bool]:
        answer = _ok(self.post("step", {"action": action}))
        assert answer["state"] == self.observe()
        actions = _ok(requests.get(f"{self.base}/available_actions", params={"env_idx": self.env_id}))
        assert isinstance(actions["has_search_bar"], bool) and isinstance(actions["clickables"], list)
        return answer["state"], answer["reward"], answer["done"]


class ALFWorldClient(_Client):
    """ALFWorld's client: /create -> {"id"}; every body names it id; reset {"game", "world_type"}; answers carry
    available_actions; errors are HTTP 200 {"error"}."""

    task_key, session_key, errors_in_body = "game", "id", True

    def __init__(self, base: str) -> None:
        self.base = base
        created = requests.post(f"{base}/create")
        assert created.status_code == 200
        self.env_id = created.json()["id"]
        self.available_actions: list[str] = []

    def post(self, path: str, data: dict[str, Any]) -> requests.Response:
        return requests.post(f"{self.base}/{path}", json={**data, "id": self.env_id})

    def observe(self) -> str:
        return _ok(requests.get(f"{self.base}/observation", params={"id": self.env_id}))

    def reset(self, index: int) -> str:
        answer = _ok(self.post("reset", {"game": index, "world_type": "Text"}))
        assert answer["id"] == self.env_id and answer["task_type"]
        self.available_actions = answer["available_actions"]
        return answer["observation"]

    def step(self, action: str) -> tuple[str, float, bool]:
        answer = _ok(self.post("step", {"action": action}))
        self.available_actions = answer["available_actions"]
        assert self.available_actions == _ok(requests.get(f"{self.base}/available_actions", params={"id": self.env_id}))
        return answer["observation"], answer["reward"], answer["done"]

    def close(self) -> Any:
        return _ok(self.post("close", {}))


class TextCraftClient(_Client):
    """TextCraft's client, on SearchQA-v0: /create {"minecraft_dir", "commands", "goal"} -> {"id", "observation"};
    every body names it id; reset {"data_idx"}; a step sends the line after the last "Action:" with every character
    but letters, digits, commas and spaces deleted; observe() is the last answer's observation."""

    task_key, session_key = "data_idx", "id"
    env_kwargs = {"action_format": "plain"}  # noqa: RUF012 - read only

    def __init__(self, base: str) -> None:
        self.base = base
        created = requests.post(f"{base}/create", json={"minecraft_dir": "agentenv_textcraft/", "commands": None,
                                                        "goal": None})
        assert created.status_code == 200, created.text
        self.env_id, self.observation = created.json()["id"], created.json()["observation"]

    @staticmethod
    def sent(action: str) -> str:
        found = re.findall(r"Action:\s*(.*?)(?=\n|$)", action, re.DOTALL)
        return " ".join(re.sub(r"[^A-Za-z0-9, ]+", "", found[-1] if found else "").split())

    def post(self, path: str, data: dict[str, Any]) -> requests.Response:
        return requests.post(f"{self.base}/{path}", json={**data, "id": self.env_id})

    def observe(self) -> str:
        return self.observation

    def reset(self, index: int) -> str:
        self.observation = _ok(self.post("reset", {"data_idx": index}))["observation"]
        return self.observation

    def step(self, action: str) -> tuple[str, float, bool]:
        answer = _ok(self.post("step", {"action": self.sent(action)}))
        self.observation = answer["observation"]
        return answer["observation"], answer["reward"], answer["done"]

    def close(self) -> Any:
        return _ok(self.post("close", {}))


FAMILIES = [pytest.param(SEARCH, SearchQAClient, id="SearchQA", marks=requires_envs([SEARCH])),
            pytest.param(WEBSHOP, WebShopClient, id="WebShop", marks=requires_envs([WEBSHOP])),
            pytest.param(ALFWORLD, ALFWorldClient, id="ALFWorld", marks=requires_envs([ALFWORLD])),
            pytest.param(SEARCH, TextCraftClient, id="TextCraft-on-SearchQA", marks=requires_envs([SEARCH]))]


def _ok(response: requests.Response) -> Any:
    assert response.status_code == 200, response.text  # AgentGym's clients assert this on every call
    answer = response.json()
    assert not (isinstance(answer, dict) and "error" in answer), answer
    return answer


def _refused(client: Any, response: requests.Response) -> None:
    """The dialect's answer to an id it does not know: 404 {code, message}, or ALFWorld's 200 {"error"}."""
    if client.errors_in_body:
        assert response.status_code == 200 and "No agentgym/" in response.json()["error"], response.text
    else:
        assert response.status_code == 404 and response.json()["code"] == "session_not_found", response.text


def _close_refused(client: Any, response: requests.Response) -> None:
    """A close of an id the server does not know: SearchQA's and WebShop's false, else the dialect's error."""
    if isinstance(client, (SearchQAClient, WebShopClient)):
        assert response.status_code == 200 and response.json() is False, response.text
    else:
        _refused(client, response)


def _play_the_oracle(client: Any, env_id: str, index: int) -> None:
    """The client plays the oracle's episode of task ``index`` to reward 1, observation for observation with the
    in-process env (made with the client's env kwargs, stepped with what the client sends), and closes it."""
    oracle = agentgym.make(env_id, **type(client).env_kwargs).unwrapped
    prompt, info = oracle.reset(options={"index": index})
    assert client.reset(index) == prompt == client.observe()
    if env_id == ALFWORLD:
        assert client.available_actions == info["admissible_commands"]
    done, reward, turns = False, 0.0, 0
    while not done:
        action = oracle.oracle_action()
        expected, *_ = oracle.step(client.sent(action))
        observation, reward, done = client.step(action)
        assert observation == expected  # the same episode, turn by turn, as in process
        assert "No valid action" not in observation
        turns += 1
        assert turns <= 50
    assert reward == 1.0 and turns >= 2
    assert client.close() in (True, {"closed": True})
    oracle.close()


@pytest.mark.parametrize("env_id, client_class", FAMILIES)
def test_the_familys_own_client_plays_the_oracle_to_reward_1(url, env_id, client_class):
    client = client_class(f"{url}/{env_id}")
    _play_the_oracle(client, env_id, 3)
    _refused(client, client.post("step", {"action": "look"}))


@pytest.mark.parametrize("env_id, client_class", FAMILIES)
def test_no_request_touches_a_session_another_client_created(url, env_id, client_class):
    base = f"{url}/{env_id}"
    owner, other = client_class(base), client_class(base)
    prompt = owner.reset(1)
    other.reset(2)
    guesses = {0, 1, 2, 3, owner.env_id + 1, owner.env_id - 1, other.env_id + 1, other.env_id - 1} - {owner.env_id}
    key = client_class.session_key
    for guess in guesses:
        for path, body in (("reset", {client_class.task_key: 0}), ("step", {"action": "look"}), ("close", {})):
            response = requests.post(f"{base}/{path}", json={**body, key: guess})
            (_close_refused if path == "close" else _refused)(other, response)
        _refused(other, requests.get(f"{base}/observation", params={key: guess}))
    # the owner's id in the task field is a task index (out of range here), never a session
    answer = other.post("reset", {client_class.task_key: owner.env_id})
    if client_class.errors_in_body:
        assert answer.status_code == 200 and "index must be" in answer.json()["error"]
    else:
        assert answer.status_code == 422 and "index must be" in answer.json()["message"]
    assert owner.observe() == prompt  # untouched: still its own task, at its start
    oracle = agentgym.make(env_id, **client_class.env_kwargs).unwrapped
    oracle.reset(options={"index": 1})
    action = oracle.oracle_action()
    assert owner.step(action)[0] == oracle.step(client_class.sent(action))[0]
    for client in (owner, other):
        client.close()
    oracle.close()


@pytest.mark.parametrize("env_id, client_class", FAMILIES)
def test_the_sessions_gauge_never_goes_negative_over_creates_closes_and_failed_closes(url, env_id, client_class):
    base = f"{url}/{env_id}"

    def gauge() -> float:
        line = next(line for line in requests.get(f"{url}/metrics").text.splitlines()
                    if line.startswith(f'agentgym_sessions{{env_id="{env_id}"}}'))
        return float(line.split()[-1])

    start = gauge()
    seen = [start]
    for _ in range(6):
        clients = [client_class(base) for _ in range(3)]
        seen.append(gauge())
        assert seen[-1] == start + 3
        with ThreadPoolExecutor(4) as pool:  # two closes of one id race; only one may count
            answers = list(pool.map(lambda c: c.post("close", {}), [clients[0], clients[0], clients[1], clients[1]]))
        assert sum(a.status_code == 200 and a.json() in (True, {"closed": True}) for a in answers) == 2
        seen.append(gauge())
        for client in clients[:2]:  # closes of closed ids fail, in the dialect's form, and change nothing
            _close_refused(client, client.post("close", {}))
            seen.append(gauge())
        assert _ok(clients[2].post("close", {})) in (True, {"closed": True})
        _close_refused(clients[2], clients[2].post("close", {}))
        seen.append(gauge())
        assert seen[-1] == start
    assert min(seen) >= 0 and seen[-1] == start
    assert requests.get(f"{url}/healthz").json()["capacity"]["envs"][env_id]["sessions"] == start


def test_a_task_index_naming_another_session_is_a_task_index_in_process():
    """SearchQA-v0 speaks TextCraft's dialect beside SearchQA's: a reset naming env_idx reads id as the task."""
    from fastapi.testclient import TestClient

    from agentgym.server import create_app

    with TestClient(create_app([SEARCH])) as client:
        base = f"/{SEARCH}"
        first = client.post(f"{base}/create").json()  # TextCraft's client reads the first observation here
        mine = client.post(f"{base}/create").json()["id"]
        stepped = client.post(f"{base}/step", json={"id": first["id"], "action": "<search>Lima</search>"})
        assert stepped.json()["info"]["turn"] == 1
        reset = client.post(f"{base}/reset", json={"env_idx": mine, "id": first["id"]})
        assert reset.status_code == 422 and "index must be" in reset.json()["message"]
        assert client.post(f"{base}/reset", json={"env_idx": mine, "id": 2}).json().startswith("Answer")
        # the first session was not reset: its next step is turn 2
        stepped = client.post(f"{base}/step", json={"id": first["id"], "action": "<search>Lima</search>"})
        assert stepped.json()["info"]["turn"] == 2
        assert isinstance(first["id"], int) and first["observation"] and first["done"] is False


@pytest.fixture(scope="module")
def token_url():
    with serving(SEARCH, WEBSHOP, ALFWORLD, token=TOKEN) as url:
        yield url


@pytest.mark.parametrize("env_id, client_class", FAMILIES)
def test_the_familys_own_client_carries_the_token_in_its_base_url(token_url, env_id, client_class):
    """requests sends a URL's user info as HTTP Basic auth: the token, as the password, reaches every route."""
    base = f"{token_url}/{env_id}"
    _play_the_oracle(client_class(base.replace("http://", f"http://agentgym:{TOKEN}@")), env_id, 2)
    needed, wrong = "This server needs its token.", "The token sent is not the server's token."
    no_password = base.replace("http://", f"http://{TOKEN}@")  # the token as user name: requests sends no auth
    for url, reason in ((base, needed), (base.replace("http://", "http://agentgym:wrong@"), wrong),
                        (no_password, needed)):
        with pytest.raises(AssertionError, match="401"):
            client_class(url)
        refused = requests.post(f"{url}/create")
        assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Bearer"
        message = refused.json()["message"]
        assert message.startswith(reason) and "http://agentgym:<token>@host:port/" in message, message
    bearer = requests.post(f"{base}/create", headers={"Authorization": f"Bearer {TOKEN}"})
    assert bearer.status_code == 200


@requires_envs([SEARCH])
def test_textcraft_s_client_gets_plain_word_actions_only_where_they_can_play():
    """Its filter leaves no <search>, <answer> or code: SearchQA-v0 plays in plain words; MathTool-v0, whose
    actions are code, refuses it at /create with the reason, rather than answering every step with an error."""
    from fastapi.testclient import TestClient

    from agentgym.server import create_app

    textcraft = {"minecraft_dir": "agentenv_textcraft/", "commands": None, "goal": None}
    with TestClient(create_app([SEARCH, "agentgym/MathTool-v0"])) as client:
        created = client.post(f"/{SEARCH}/create", json=textcraft).json()
        assert "Action: search <query>" in created["observation"] and "<search>" not in created["observation"]
        step = client.post(f"/{SEARCH}/step", json={"id": created["id"], "action": TextCraftClient.sent(
            "Thought: I should look it up.\nAction: search <capital of Peru?>")}).json()
        assert "Lima" in step["observation"] and step["info"]["action_error"] is None
        tags = client.post(f"/{SEARCH}/create").json()  # a client that sends actions unchanged: tags, as before
        assert "<search> your query </search>" in tags["observation"]
        refused = client.post("/agentgym/MathTool-v0/create", json=textcraft)
        assert refused.status_code == 422 and refused.json()["code"] == "invalid_request"
        assert "deletes every character but letters, digits, commas and spaces" in refused.json()["message"]
        assert client.post("/agentgym/MathTool-v0/create").status_code == 200
        assert client.get("/healthz").json()["sessions"] == 3  # the refused create made no session
