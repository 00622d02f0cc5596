"""The dialects of AgentGym's env-server protocol: how each env family's own client names things and reads answers.

AgentGym's clients (``agentenv/envs/<family>.py``) all POST ``/create``, ``/reset``,
``/step`` and ``/close`` and GET ``/observation``, but disagree on the details:

- TextCraft: the session is ``id``; reset's task index ``data_idx``; /create answers
  ``{"id", "observation", ...}``, reset a record. Errors here are HTTP 404/422 ``{code,
  message}`` (TextCraft's own server answers 200 ``{"error"}``; its client fails on both).
  TextCraft's client deletes every character but letters, digits, commas and spaces
  from an action, and names ``minecraft_dir`` in its /create: a session it creates plays
  in the ``plain`` action format (``search capital of Peru``, ``answer Lima``) on the
  envs that can be played so (``PLAIN_ACTION_ENVS``); on the others its /create is
  refused (422), since no action of theirs would survive.
- SearchQA: the session is ``env_idx``; reset's task index ``id`` (and /create's);
  /create answers the bare int, reset the observation text; /close true or false.
- WebShop: the session is ``env_idx``; reset's task index ``session_id``; /create answers
  the bare int, reset ``[observation, null]``; the step's text is ``state``;
  GET /available_actions ``{"has_search_bar", "clickables"}``.
- ALFWorld: the session is ``id``; reset's task index ``game`` (with ``world_type``);
  reset and step answers carry ``available_actions``; errors are HTTP 200 ``{"error"}``.

The session field always holds the int ``/create`` answered; the task field is an
index into the env's split and is never read as a session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ALFWORLD", "DIALECTS", "PLAIN_ACTION_ENVS", "SEARCHQA", "TEXTCRAFT", "WEBSHOP", "Dialect", "dialects_of"]


@dataclass(frozen=True)
class Dialect:
    """One family's wire protocol: its field names and answer shapes (compat.py serves every dialect the same way)."""

    name: str
    session_key: str  # the field (body and query string) holding the int /create answered
    task_keys: tuple[str, ...]  # reset body fields holding the task index; the first one present counts
    create_key: str | None = None  # a create body field holding the first task's index; naming it picks the dialect
    # a create body field only a client that deletes all but [A-Za-z0-9, ] from actions sends: its sessions play
    # in the plain action format (on PLAIN_ACTION_ENVS; elsewhere its /create is refused)
    plain_client_key: str | None = None
    bare_id: bool = False  # /create answers the bare int instead of {"id": int, ...}
    text_key: str = "observation"  # the step answer's field for the observation (WebShop's is "state")
    reset_answer: Literal["record", "text", "pair"] = "record"  # {"id", "observation", ...}, the text, [text, null]
    observation_answer: Literal["object", "text"] = "text"  # GET /observation: {"observation": text} or the text
    close_answer: Literal["object", "bool"] = "object"  # {"closed": true}, or true (false for an unknown id)
    errors_in_body: bool = False  # errors are HTTP 200 {"error": message}, as its server answers them
    from_info: tuple[tuple[str, str], ...] = ()  # (answer field, info key): added to reset and step answers
    actions_key: str | None = None  # the info key GET /available_actions answers with
    reset_constants: tuple[tuple[str, str], ...] = ()  # reset fields its client sends, with the one value served


TEXTCRAFT = Dialect("TextCraft", session_key="id", task_keys=("data_idx",), observation_answer="object",
                    plain_client_key="minecraft_dir")
SEARCHQA = Dialect("SearchQA", session_key="env_idx", task_keys=("id",), create_key="id", bare_id=True,
                   reset_answer="text", close_answer="bool")
WEBSHOP = Dialect("WebShop", session_key="env_idx", task_keys=("session_id",), bare_id=True, text_key="state",
                  reset_answer="pair", close_answer="bool", actions_key="available_actions")
ALFWORLD = Dialect("ALFWorld", session_key="id", task_keys=("game", "data_idx"), errors_in_body=True,
                   from_info=(("available_actions", "admissible_commands"), ("task_type", "task_type")),
                   actions_key="admissible_commands", reset_constants=(("world_type", "Text"),))

# Per env id, the dialects served at /<env id>, tried in order: a request speaks the first one whose session
# field it names (on /create: whose create field it names), else the last. SearchQA-v0 keeps TextCraft's
# dialect too: the two never name the same session field, and SearchQA's client always sends {"id": 0} to
# /create. WebShop's /create (no body, a bare int answered) cannot be told from TextCraft's, so WebShop-v0
# speaks WebShop's only. ALFWorld's dialect reads TextCraft's data_idx as well.
DIALECTS: dict[str, tuple[Dialect, ...]] = {
    "agentgym/SearchQA-v0": (SEARCHQA, TEXTCRAFT),
    "agentgym/WebShop-v0": (WEBSHOP,),
    "agentgym/ALFWorld-v0": (ALFWORLD,),
}


# The envs whose every action can be written in plain words, letters, digits, commas and spaces: SearchQA's
# queries and answers (its answers are compared without punctuation). The others' actions are code (MathTool,
# PyCode, SWEBench) or take two arguments (WebShopBrowser's fill); WebShop's and ALFWorld's clients are their own.
PLAIN_ACTION_ENVS = frozenset({"agentgym/SearchQA-v0"})


def dialects_of(env_id: str) -> tuple[Dialect, ...]:
    """The dialects served for ``env_id``: its family's, else TextCraft's (AgentGym's most common one)."""
    return DIALECTS.get(env_id, (TEXTCRAFT,))
