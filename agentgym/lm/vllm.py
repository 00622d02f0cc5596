"""Multi-turn generation on vLLM, through the engine TRL's ``GRPOTrainer`` manages (``use_vllm=True``).

TRL owns the engine and keeps its weights in step with the policy: before it
calls our ``rollout_func`` it pushes the latest weights into the colocated
``vllm.LLM`` (``vllm_mode="colocate"``) or into a ``trl vllm-serve`` process
(``vllm_mode="server"``). :class:`VLLMGenerator` only asks that engine for one
turn at a time, from token ids (nothing is re-tokenized), and keeps each
sampled token's log-probability so TRL can apply its vLLM importance-sampling
correction to the model tokens (observation tokens carry 0.0 and are masked).

Rows that share the same stop strings go in one request; each row gets its own
sampling seed in colocate mode (a shared seed would make a GRPO group's
identical prompts produce identical turns). The server's HTTP API takes one
set of sampling parameters per request and no per-row seed, so there rows are
seeded by the server's own generator.

vLLM needs a CUDA GPU; it is the ``vllm`` extra and its tests carry the ``gpu`` marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.lm.generation import Turn

__all__ = ["VLLM_INSTALL", "VLLMGenerator"]

VLLM_INSTALL = "pip install 'agentgym-suite[vllm]' on a CUDA GPU machine"


class VLLMGenerator:
    """Sampled turns from a vLLM engine: ``llm`` (a ``vllm.LLM``) or ``client`` (TRL's ``VLLMClient``)."""

    def __init__(self, tokenizer: Any, *, llm: Any = None, client: Any = None, temperature: float = 1.0,
                 top_p: float = 1.0, top_k: int = 0) -> None:
        if (llm is None) == (client is None):
            raise ConfigError("VLLMGenerator needs exactly one engine: llm= (colocate) or client= (server).")
        self.tokenizer = tokenizer
        self.llm = llm
        self.client = client
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k

    @classmethod
    def from_trainer(cls, trainer: Any, tokenizer: Any, *, temperature: float, top_p: float) -> VLLMGenerator:
        """The engine of a ``GRPOTrainer`` built with ``use_vllm=True``."""
        generation = getattr(trainer, "vllm_generation", None)
        if generation is None:
            raise ConfigError("The trainer has no vLLM engine: build it with backend='vllm' (GRPOConfig use_vllm).")
        if generation.mode == "colocate":
            return cls(tokenizer, llm=generation.llm, temperature=temperature, top_p=top_p)
        return cls(tokenizer, client=generation.vllm_client, temperature=temperature, top_p=top_p)

    def generate(self, contexts: Sequence[Sequence[int]], *, stops: Sequence[Sequence[str]],
                 max_new_tokens: int | Sequence[int], seed: int) -> list[Turn]:
        from agentgym.lm.generation import _seed, _stop_index

        limits = [max_new_tokens] * len(contexts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        groups: dict[tuple[tuple[str, ...], int], list[int]] = {}
        for row, row_stops in enumerate(stops):
            groups.setdefault((tuple(row_stops), limits[row]), []).append(row)
        out: list[Turn | None] = [None] * len(contexts)
        for (group_stops, limit), rows in groups.items():
            seeds = [_seed(seed, row) for row in rows]
            sampled = self._sample([list(contexts[r]) for r in rows], list(group_stops), limit, seeds)
            for row, (ids, logprobs) in zip(rows, sampled):
                end, ended, stopped = _stop_index(self.tokenizer, ids, group_stops, self.tokenizer.eos_token_id)
                kept = logprobs[:end] if len(logprobs) >= end else None
                out[row] = Turn(ids=ids[:end], ended=ended, stopped=stopped, logprobs=kept)
        return [turn for turn in out if turn is not None]

    def _sample(self, prompts: list[list[int]], stops: list[str], max_tokens: int,
                seeds: list[int]) -> list[tuple[list[int], list[float]]]:
        extra = {"stop": stops or None, "include_stop_str_in_output": True}
        if self.client is not None:
            result = self.client.generate(prompts=prompts, n=1, temperature=self.temperature, top_p=self.top_p,
                                          top_k=self.top_k, max_tokens=max_tokens, logprobs=0, generation_kwargs=extra)
            return [(list(ids), [_float(lp[0]) for lp in lps])
                    for ids, lps in zip(result["completion_ids"], result["logprobs"])]
        try:
            from vllm import SamplingParams
        except ImportError as e:  # pragma: no cover - the trainer built the engine, so vllm is there
            raise DependencyNotInstalled("The vLLM backend", VLLM_INSTALL) from e
        params = [SamplingParams(n=1, temperature=self.temperature, top_p=self.top_p, top_k=self.top_k,
                                 max_tokens=max_tokens, logprobs=0, seed=s, **extra) for s in seeds]
        outputs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], sampling_params=params,
                                    use_tqdm=False)
        sampled = []
        for output in outputs:
            completion = output.outputs[0]
            ids = list(completion.token_ids)
            logprobs = [_float(step[token].logprob) for step, token in zip(completion.logprobs or [], ids)]
            sampled.append((ids, logprobs))
        return sampled


def _float(value: Any) -> float:
    # vLLM reports a NaN log-probability as None; TRL maps NaN back and leaves those tokens uncorrected
    return float("nan") if value is None else float(value)
