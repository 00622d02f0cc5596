"""A verifiers 0.4 environment written in verifiers' own API, for ``agentgym eval --env vf:vf_capitals``: four
capital-city questions, a ``lookup`` tool server (``atlas_lookup`` to the model) and an exact-match reward. The
reward also counts the tool's calls, so the tests see each call reach the tool server."""

from __future__ import annotations

import verifiers.v1 as vf

CAPITALS = {"France": "Paris", "Peru": "Lima", "Japan": "Tokyo", "Kenya": "Nairobi"}
CALLS: list[str] = []  # every country the tool was asked about, in this process


class CapitalData(vf.TaskData):
    answer: str


class CapitalTask(vf.Task[CapitalData]):
    @vf.reward
    async def exact_match(self, trace: vf.Trace) -> float:
        return float(trace.last_reply.strip().lower() == self.data.answer.lower())

    @vf.metric
    async def tool_calls(self, trace: vf.Trace) -> float:
        return float(sum(len(m.tool_calls or ()) for m in trace.assistant_messages))


class Atlas(vf.Toolset[vf.SharedToolsetConfig]):
    TOOL_PREFIX = "atlas"

    @vf.tool
    async def lookup(self, country: str) -> str:
        """The capital city of a country."""
        CALLS.append(country)
        return CAPITALS.get(country, f"No country named {country!r}.")


class CapitalsConfig(vf.TasksetConfig):
    tools: vf.SharedToolsetConfig = vf.SharedToolsetConfig()


class CapitalsTaskset(vf.Taskset[CapitalTask, CapitalsConfig]):
    def load(self) -> list[CapitalTask]:
        return [CapitalTask(CapitalData(id=f"capital-{country.lower()}", answer=city,
                                        system_prompt="Answer with the city's name only.",
                                        prompt=f"What is the capital of {country}?"), self.config.task)
                for country, city in CAPITALS.items()]

    @classmethod
    def toolsets(cls, config: CapitalsConfig) -> list[vf.Toolset]:
        return [Atlas(config.tools)]


__all__ = ["CapitalsTaskset"]
