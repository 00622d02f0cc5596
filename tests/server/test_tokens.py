"""The server's token: Bearer, or HTTP Basic with the token as password (any user name), on every HTTP route;
otherwise 401 ``unauthorized`` saying what was wrong and how to send it."""

import base64
import hmac

import pytest
from fastapi.testclient import TestClient
from helpers.gates import requires_envs

from agentgym.server import create_app, tokens
from agentgym.server.tokens import token_problem

SEARCH = "agentgym/SearchQA-v0"
TOKEN = "s3cret-t0ken"


def basic(credentials: bytes) -> bytes:
    return b"Basic " + base64.b64encode(credentials)


@pytest.mark.parametrize("header", [b"Bearer " + TOKEN.encode(), b"bearer " + TOKEN.encode(),
                                    basic(b"agentgym:" + TOKEN.encode()), basic(b":" + TOKEN.encode()),
                                    basic(b"anyone:" + TOKEN.encode()), b"BASIC " + base64.b64encode(b"x:" + TOKEN.encode())])
def test_bearer_or_basic_with_the_token_as_password_passes(header):
    assert token_problem(header, TOKEN) is None


@pytest.mark.parametrize("header, reason", [
    (b"", "This server needs its token."),
    (b"Bearer wrong", "The token sent is not the server's token."),
    (b"Bearer " + TOKEN.encode() + b"x", "The token sent is not the server's token."),
    (b"Bearer", "The token sent is not the server's token."),
    (basic(TOKEN.encode() + b":"), "The token sent is not the server's token."),  # the token as user name
    (basic(TOKEN.encode()), "The token sent is not the server's token."),  # no colon: no password
    (basic(b"agentgym:wrong"), "The token sent is not the server's token."),
    (b"Basic !!not-base64!!", "The Basic credentials are not base64 of 'user:token'."),
    (b"Digest " + TOKEN.encode(), "Authorization scheme 'Digest' is not served: use Bearer or Basic."),
    (TOKEN.encode(), f"Authorization scheme '{TOKEN}' is not served: use Bearer or Basic."),
])
def test_anything_else_is_refused_with_its_reason(header, reason):
    assert token_problem(header, TOKEN) == reason


def test_the_secret_sent_is_compared_in_constant_time(monkeypatch):
    compared, compare_digest = [], hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return compare_digest(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", spy)
    for header in (b"Bearer nope", basic(b"u:" + TOKEN.encode())):
        token_problem(header, TOKEN)
    assert compared == [(b"nope", TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]


@requires_envs([SEARCH])
def test_basic_auth_opens_every_route_family_and_nothing_else_does():
    """The /v1 routes (the plain-ASGI hot path included), the AgentGym routes and OpenEnv's HTTP routes."""
    base = f"/{SEARCH}"
    with TestClient(create_app([SEARCH], token=TOKEN)) as client:
        def routes(auth: tuple[str, str] | None) -> list[int]:
            sid = client.post("/v1/sessions", json={"env_id": SEARCH}, auth=auth)
            session = sid.json().get("session_id", "none")
            compat = client.post(f"{base}/create", auth=auth)
            compat_id = compat.json().get("id", 0) if compat.status_code == 200 else 0
            answers = [client.get("/v1/envs", auth=auth), sid,
                       client.post(f"/v1/sessions/{session}/step", json={"action": "<search>Lima</search>"},
                                   auth=auth),
                       compat, client.post(f"{base}/step", json={"id": compat_id, "action": "<search>Lima</search>"},
                                           auth=auth),
                       client.get(f"{base}/observation", params={"id": compat_id}, auth=auth),
                       client.post(f"{base}/close", json={"id": compat_id}, auth=auth),
                       client.get(f"/openenv/{SEARCH}/health", auth=auth),
                       client.post(f"/openenv/{SEARCH}/reset", json={"seed": 0}, auth=auth)]
            for answer in answers:
                if answer.status_code == 401:
                    assert answer.json()["code"] == "unauthorized" and answer.headers["www-authenticate"] == "Bearer"
                    assert "http://agentgym:<token>@host:port/" in answer.json()["message"]
            return [a.status_code for a in answers]

        for user in ("agentgym", "", "x"):
            assert routes((user, TOKEN)) == [200, 201, 200, 200, 200, 200, 200, 200, 200]
        for auth in (None, ("agentgym", "wrong"), (TOKEN, "")):
            assert routes(auth) == [401] * 9
        assert client.get("/healthz").status_code == 200  # no token needed
