"""The wire protocol: pydantic models for every request and response body."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BatchCreateRequest", "BatchCreateResponse", "BatchCreateResult", "BatchResetItem", "BatchResetRequest",
    "BatchResetResponse", "BatchResetResult", "BatchStepItem", "BatchStepRequest", "BatchStepResponse",
    "BatchStepResult", "Capacity", "CreateSessionRequest", "CreateSessionResponse", "EnvCapacity", "EnvSpecModel",
    "ErrorBody", "HealthResponse", "ProcessHealth", "ResetOptions", "ResetRequest", "ResetResponse", "StepRequest",
    "StepResponse", "VerifyRequest", "VerifyResponse", "reset_options",
]

# Any JSON value, so that a local and a remote env give one action the same observation.
_ACTION_DOC = ("The agent's action: text, a tool call {\"name\": ..., \"arguments\": {...}}, a list of them, or "
               "{\"answer\": ...}. Any other JSON value is the agent's mistake: it comes back as an observation "
               "with info.action_error, as in process.")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    """Every error: a stable machine-readable ``code`` and a human ``message``."""

    code: str = Field(examples=["session_not_found"])
    message: str


class EnvSpecModel(BaseModel):
    id: str
    description: str
    extras: list[str]
    client_kwargs: list[str] = Field(description="Env keyword arguments a client may pass when creating a session.")


# Gymnasium seeds are non-negative: checked here, so a negative one is a 422 naming `seed`, not an env error
_SEED_DOC = "The episode's seed: an integer in [0, 2**63) (null: a fresh random one)."
_MAX_SEED = 2**63 - 1


class ResetOptions(_Strict):
    """What ``reset`` may pick (checked before any env code runs): one task by id, or a split and/or an index."""

    task_id: str | int | None = Field(default=None, description="A task id of the env's task source.")
    split: str | None = Field(default=None, max_length=200, description="A split of the env, e.g. 'train'.")
    index: int | None = Field(default=None, ge=0, le=2**31, strict=True,
                              description="The task's index in the split (0-based).")

    def as_options(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


def reset_options(options: ResetOptions | None) -> dict[str, Any] | None:
    """The ``options`` dict ``env.reset`` takes, from a request's checked options."""
    return None if options is None else options.as_options()


class CreateSessionRequest(_Strict):
    env_id: str = Field(examples=["agentgym/SearchQA-v0"])
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Env keyword arguments (see client_kwargs).")
    seed: int | None = Field(default=None, ge=0, le=_MAX_SEED, strict=True, description=_SEED_DOC)
    options: ResetOptions | None = Field(default=None, description="reset options: task_id, split, index.")


class ResetResponse(BaseModel):
    observation: str
    info: dict[str, Any]


class CreateSessionResponse(ResetResponse):
    session_id: str
    env_id: str


class ResetRequest(_Strict):
    seed: int | None = Field(default=None, ge=0, le=_MAX_SEED, strict=True, description=_SEED_DOC)
    options: ResetOptions | None = None


class StepRequest(_Strict):
    action: Any = Field(description=_ACTION_DOC, examples=["<search>capital of Peru</search>"])
    step_id: int | None = Field(default=None, ge=1, description=(
        "The turn this step makes (1 after reset). A retried request with the step_id of the last step "
        "gets that step's response again instead of a second step."))


class StepResponse(BaseModel):
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class BatchStepItem(_Strict):
    session_id: str
    action: Any = Field(description=_ACTION_DOC)
    step_id: int | None = Field(default=None, ge=1)


class BatchStepRequest(_Strict):
    steps: list[BatchStepItem] = Field(max_length=4096)


class BatchStepResult(BaseModel):
    session_id: str
    result: StepResponse | None = None
    error: ErrorBody | None = None


class BatchStepResponse(BaseModel):
    results: list[BatchStepResult]


class BatchResetItem(_Strict):
    session_id: str
    seed: int | None = Field(default=None, ge=0, le=_MAX_SEED, strict=True, description=_SEED_DOC)
    options: ResetOptions | None = None


class BatchResetRequest(_Strict):
    resets: list[BatchResetItem] = Field(max_length=4096)


class BatchResetResult(BaseModel):
    session_id: str
    result: ResetResponse | None = None
    error: ErrorBody | None = None


class BatchResetResponse(BaseModel):
    results: list[BatchResetResult]


class BatchCreateRequest(_Strict):
    sessions: list[CreateSessionRequest] = Field(max_length=1024)


class BatchCreateResult(BaseModel):
    """A created session (``session_id``, ``observation``, ``info``) or the ``error`` that prevented it."""

    env_id: str
    session_id: str | None = None
    observation: str | None = None
    info: dict[str, Any] | None = None
    error: ErrorBody | None = None


class BatchCreateResponse(BaseModel):
    results: list[BatchCreateResult]


class DescribeEnvRequest(_Strict):
    env_id: str = Field(description="A served env id.")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Env keyword arguments, as for a session.")
    split: str | None = Field(default=None, max_length=200, description="A split (null: the env's default).")


class DescribeEnvResponse(BaseModel):
    env_id: str
    split: str = Field(description="The split described (the env's default when none was asked).")
    splits: list[str]
    tasks: int = Field(description="How many tasks the split has.")
    env_digest: str = Field(description="What the env is (code, tasks, kwargs as the server makes it): the eval's "
                                        "resume key holds it (agentgym.eval.envdigest).")


class VerifyRequest(_Strict):
    verifier: str = Field(examples=["qa_em"], description=(
        "A verifier by name (qa_em, math, ...), or env:<env id>: that served env's own verifier, with task "
        "{'task_id': ...} naming one of its tasks."))
    prediction: str | None
    task: dict[str, Any] = Field(description="The gold data the verifier needs, e.g. {'golden_answers': [...]}.")


class VerifyResponse(BaseModel):
    reward: float
    correct: bool
    details: dict[str, Any]


class EnvCapacity(BaseModel):
    sessions: int = Field(description="Open sessions of this env.")
    limit: int = Field(description="Sessions of this env the server holds at most (max_sessions if it has no limit "
                                   "of its own).")
    free: int = Field(description="Sessions of this env a create may open now.")


class Capacity(BaseModel):
    max_sessions: int = Field(description="Sessions the server holds at most, of all envs.")
    free: int
    envs: dict[str, EnvCapacity]


class ProcessHealth(BaseModel):
    index: int = Field(description="The process's place among the server's processes, 0 to N-1.")
    generation: int | None = Field(description="0 for the first process of this index, one more for each replacement "
                                               "started after one died (modulo 256); null while none answers.")
    pid: int | None
    status: str = Field(examples=["ok", "down"])
    sessions: int = Field(description="Open sessions this process holds.")


class HealthResponse(BaseModel):
    status: str = Field(examples=["ok", "degraded"], description="degraded: a process of the server does not answer "
                                                                 "(its sessions are lost; a replacement is starting).")
    sessions: int = Field(description="Open sessions.")
    version: str
    capacity: Capacity
    processes: list[ProcessHealth] | None = Field(default=None, description=(
        "With agentgym serve --processes N: each process, and the sessions it holds."))
    envs_failing: dict[str, str] | None = Field(default=None, description=(
        "Envs whose last session could not be opened, or whose probe at start failed (agentgym serve makes one of "
        "each and reads its task list): env id -> why. status is degraded while any is listed."))
    ray: dict[str, Any] | None = Field(default=None, description=(
        "With agentgym serve --ray: the Ray pool's nodes, their env hosts (pid, sessions; why a lost one died) and "
        "their per-node session limits. status is degraded while a host of a live node is lost."))
