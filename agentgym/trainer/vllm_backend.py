"""Moved to ``agentgym.lm.vllm`` (the generators live in ``agentgym.lm``, beside the transformers one, for every
driver that plays a model's episodes: train, eval and the gateway); this name keeps working for one release, with
a ``DeprecationWarning``."""

import warnings

from agentgym.lm.vllm import VLLM_INSTALL, VLLMGenerator

__all__ = ["VLLM_INSTALL", "VLLMGenerator"]

warnings.warn("agentgym.trainer.vllm_backend moved to agentgym.lm.vllm; import from there.", DeprecationWarning,
              stacklevel=2)
