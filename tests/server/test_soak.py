"""Soak: 1,000 concurrent sessions x 10 steps on a real server process, 0 errors, flat memory."""

import asyncio
from pathlib import Path

import aiohttp
import pytest

from helpers.server_process import serving

SEARCH = "agentgym/SearchQA-v0"


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def wave(url: str, sessions: int, steps: int) -> list[str]:
    """Open ``sessions`` sessions at once, step each ``steps`` times concurrently, close them; return errors."""
    errors: list[str] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as http:
        async def one(i: int) -> None:
            async with http.post(f"{url}/v1/sessions", json={"env_id": SEARCH, "seed": i,
                                                             "kwargs": {"max_turns": steps + 1}}) as r:
                if r.status != 201:
                    errors.append(f"create {r.status} {await r.text()}")
                    return
                sid = (await r.json())["session_id"]
            for turn in range(1, steps + 1):
                body = {"action": f"<search>capital {i} {turn}</search>", "step_id": turn}
                async with http.post(f"{url}/v1/sessions/{sid}/step", json=body) as r:
                    data = await r.json()
                    if r.status != 200 or data["info"]["turn"] != turn:
                        errors.append(f"step {r.status} {data}")
            async with http.delete(f"{url}/v1/sessions/{sid}") as r:
                if r.status != 200:
                    errors.append(f"close {r.status}")

        await asyncio.gather(*(one(i) for i in range(sessions)))
    return errors


@pytest.mark.slow
def test_soak_1000_sessions_flat_memory():
    with serving("--max-sessions", "1000", return_process=True) as (url, proc):
        assert asyncio.run(wave(url, 1000, 10)) == []
        after_first = rss_kb(proc.pid)
        assert asyncio.run(wave(url, 1000, 10)) == []
        after_second = rss_kb(proc.pid)
        # the same load once more (1,000 more sessions): a leak of 10 KB a session would show as 10 MB here
        assert after_second < after_first * 1.05 + 8_000, (after_first, after_second)
