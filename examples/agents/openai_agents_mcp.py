"""An OpenAI Agents SDK agent whose tools are the episode's MCP server:
`agentgym eval --agent examples/agents/openai_agents_mcp.py:agent` (needs `pip install openai-agents`).

The model is the gateway's, through chat completions at the rollout's base URL; the tools are listed from the
rollout's MCP endpoint (streamable HTTP) and every call there is one env step. The agent ends with its final text,
or earlier through the MCP `answer` tool (then the episode is over and the text it returns is not used).
"""

import asyncio

from agents import (Agent, MaxTurnsExceeded, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner,
                    set_tracing_disabled)
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

INSTRUCTIONS = ("Solve the task with the tools you are given. When you know the answer, call the answer tool with "
                "it, or reply with the final answer and no tool call.")


def agent(task, max_turns=4, max_tokens=256, follow_up=None):
    """``follow_up``: a user message sent after the first answer (the conversation goes on: the SDK's own input
    list, then it), and the answer to it returned."""
    return asyncio.run(_run(task, max_turns=max_turns, max_tokens=max_tokens, follow_up=follow_up))


async def _run(task, *, max_turns, max_tokens, follow_up=None):
    set_tracing_disabled(True)  # the SDK sends traces to OpenAI by default; an eval sends nothing off this machine
    client = AsyncOpenAI(base_url=task.base_url, api_key=task.api_key)
    # a tool call is an env step: a sandboxed test run may take minutes, past the SDK's 5 s defaults
    tools = MCPServerStreamableHttp(params={"url": task.mcp_url, "timeout": 30, "sse_read_timeout": 600},
                                    name="agentgym", cache_tools_list=True, client_session_timeout_seconds=600)
    async with tools, client:
        solver = Agent(name="solver", instructions=INSTRUCTIONS, mcp_servers=[tools],
                       model=OpenAIChatCompletionsModel(model=task.model, openai_client=client),
                       model_settings=ModelSettings(max_tokens=max_tokens, temperature=0))
        # a made-up tool name is the model's mistake: it sees the error and goes on, as with a bad env action
        config = RunConfig(tool_not_found_behavior="return_error_to_model")
        try:
            result = await Runner.run(solver, task.prompt, max_turns=max_turns, run_config=config)
            if follow_up:
                result = await Runner.run(solver, [*result.to_input_list(), {"role": "user", "content": follow_up}],
                                          max_turns=max_turns, run_config=config)
        except MaxTurnsExceeded:
            # out of turns while still calling tools: the agent gave no final text, which the env scores as an
            # empty answer (0) like any wrong one; it is the agent's outcome, not a failure of the run
            return ""
    return str(result.final_output or "")
