"""A plain `openai`-client agent loop: `agentgym eval --agent examples/agents/openai_loop.py:agent`.

`tooluse_agent` is the same loop with one worked tool call in front of the task (a few-shot history): the agent
`agentgym train --agent examples/agents/openai_loop.py:tooluse_agent` teaches to use MathTool's python tool
(docs/training.md)."""

import json

from openai import OpenAI

EXAMPLE = [  # a few-shot history: the task, one tool call, its output, the answer
    {"role": "system", "content": "You solve arithmetic with the python tool: call it, then answer with the number "
                                  "it prints."},
    {"role": "user", "content": "Solve the following multiplication: 1234 * 5678. Give only the result as your "
                                "final answer."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_0", "type": "function", "function": {
        "name": "python", "arguments": '{"code": "print(1234 * 5678)"}'}}]},
    {"role": "tool", "tool_call_id": "call_0", "content": "7006652"},
    {"role": "assistant", "content": "7006652"},
]


def agent(task, max_turns=8, max_tokens=256, history=(), follow_up=None):
    """``follow_up``: a user message sent after the first answer (the conversation goes on), and the answer to it
    returned."""
    client = OpenAI(base_url=task.base_url, api_key=task.api_key)
    messages = [*history, {"role": "user", "content": task.prompt}]
    answer = _loop(client, task, messages, max_turns, max_tokens)
    if follow_up:
        messages.append({"role": "user", "content": follow_up})
        answer = _loop(client, task, messages, max_turns, max_tokens)
    return answer


def _loop(client, task, messages, max_turns, max_tokens):
    for _ in range(max_turns):
        reply = client.chat.completions.create(model=task.model, messages=messages, tools=task.tools or None,
                                               max_tokens=max_tokens, temperature=0)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {}
            output = task.call_tool(call.function.name, arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return message.content or ""


def tooluse_agent(task):
    return agent(task, max_turns=3, max_tokens=48, history=EXAMPLE)
