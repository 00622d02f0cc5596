"""A smolagents `ToolCallingAgent` on the episode's tools:
`agentgym eval --agent examples/agents/smolagents_agent.py:agent` (needs `pip install 'smolagents[openai]'`).

The model is the gateway's, through smolagents' OpenAI-compatible client at the rollout's base URL; each env tool
(`task.tools`, OpenAI schemas) becomes a smolagents `Tool` whose call is one env step (`task.call_tool`). The agent
ends with smolagents' own `final_answer` tool, or at `max_steps` with the answer smolagents asks the model for.
"""

from smolagents import LogLevel, OpenAIModel, Tool, ToolCallingAgent
from smolagents.tools import AUTHORIZED_TYPES


class EnvTool(Tool):
    """One env tool as a smolagents tool, built from its OpenAI schema; calling it steps the env."""

    output_type = "string"
    # forward takes the schema's arguments as keywords, so there is no fixed signature for smolagents to check
    skip_forward_signature_validation = True

    def __init__(self, schema, call_tool):
        function = schema["function"]
        parameters = function.get("parameters") or {}
        required = set(parameters.get("required") or ())
        self.name = function["name"]
        self.description = function.get("description") or self.name
        self.inputs = {key: _input(prop, optional=key not in required)
                       for key, prop in (parameters.get("properties") or {}).items()}
        self._call_tool = call_tool
        super().__init__()

    def forward(self, **arguments):
        # a model may send null for an optional argument; the env takes an absent one, not a null
        return self._call_tool(self.name, {k: v for k, v in arguments.items() if v is not None})


def _input(prop, *, optional):
    """A JSON-schema property as a smolagents input: a type it knows ("any" for what it does not)."""
    kind = prop.get("type", "any")
    kinds = kind if isinstance(kind, list) else [kind]
    known = [k for k in kinds if k in AUTHORIZED_TYPES]
    entry = {"type": "any" if len(known) != len(kinds) or not known else (known[0] if len(known) == 1 else known),
             "description": prop.get("description") or ""}
    if optional:
        entry["nullable"] = True
    return entry


def agent(task, max_steps=4, max_tokens=256, system_prompt=None):
    model = OpenAIModel(model_id=task.model, api_base=task.base_url, api_key=task.api_key, max_tokens=max_tokens,
                        temperature=0)
    tools = [EnvTool(schema, task.call_tool) for schema in task.tools]
    solver = ToolCallingAgent(tools=tools, model=model, max_steps=max_steps, verbosity_level=LogLevel.OFF)
    if system_prompt is not None:  # in place of smolagents' own: a template like it (`tools`: name -> Tool)
        solver.prompt_templates["system_prompt"] = system_prompt
    answer = solver.run(task.prompt)
    return "" if answer is None else str(answer)
