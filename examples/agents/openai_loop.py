"""A plain `openai`-client agent loop: `agentgym eval --agent examples/agents/openai_loop.py:agent`."""

import json

from openai import OpenAI


def agent(task, max_turns=8, max_tokens=256):
    client = OpenAI(base_url=task.base_url, api_key=task.api_key)
    messages = [{"role": "user", "content": task.prompt}]
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
