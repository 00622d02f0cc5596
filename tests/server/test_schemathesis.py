"""Property-based fuzzing of every served operation from the OpenAPI schema: no input gives a 5xx."""

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error

from agentgym.server import create_app

APP = create_app(["agentgym/SearchQA-v0"], max_sessions=64)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


# one pytest item per operation, each with its own id: schemathesis' own ``schema.parametrize()`` gives its items one
# node id, and pytest-xdist (the README's test command) then ran one operation of the 26
OPERATIONS = [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("operation", OPERATIONS, ids=[op.label for op in OPERATIONS])
def test_no_input_gives_a_server_error(operation):
    @given(case=operation.as_strategy())
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    def fuzz(case):
        response = case.call()
        case.validate_response(response, checks=[not_a_server_error])
        if response.status_code >= 400:  # every error is JSON {code, message}
            body = response.json()
            assert isinstance(body, dict) and body.get("code") and body.get("message"), body

    fuzz()


def test_every_operation_of_the_schema_is_fuzzed():
    assert len(OPERATIONS) == len({op.label for op in OPERATIONS}) >= 26


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
                    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
                    max_leaves=12)


@given(action=JSON, name=st.sampled_from(["search", "answer", "", "x"]), arguments=JSON)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_action_on_a_live_session_is_never_a_server_error(action, name, arguments):
    with TestClient(APP) as client:
        sid = client.post("/v1/sessions", json={"env_id": "agentgym/SearchQA-v0", "seed": 0,
                                                "kwargs": {"max_turns": 50}}).json()["session_id"]
        for payload in (action, {"name": name, "arguments": arguments}, [{"name": name, "arguments": arguments}]):
            response = client.post(f"/v1/sessions/{sid}/step", json={"action": payload})
            # any JSON value is an action: a wrong one is an observation, as in process
            assert response.status_code == 200 and isinstance(response.json()["observation"], str), response.text
        client.delete(f"/v1/sessions/{sid}")
