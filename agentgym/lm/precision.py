"""Which floating-point type a local model runs in: bf16 where the hardware computes it natively, else fp32.

``auto`` (the default of ``agentgym eval --dtype`` and of the trainer's ``precision``) picks ``bfloat16`` on a
CUDA GPU that supports it and on a CPU with native bf16 instructions (``avx512_bf16`` or ``amx_bf16`` in
``/proc/cpuinfo``), and ``float32`` elsewhere: on a CPU without them torch converts bf16 to fp32 for every
matmul, which was 5x slower than fp32 on an AVX-512 Xeon without ``avx512_bf16`` (``benchmarks/bench_mfu.py``).
bf16 changes a model's numbers: its greedy agreement with fp32 is published in docs/performance.md.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from agentgym.errors import ConfigError

__all__ = ["DTYPES", "NATIVE_BF16_FLAGS", "cpu_flags", "native_bf16", "resolve_dtype"]

DTYPES = ("auto", "float32", "bfloat16")
#: CPU flags of native bf16 arithmetic (AVX-512 BF16 on Cooper Lake and later, AMX on Sapphire Rapids and later)
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """This CPU's feature flags as ``/proc/cpuinfo`` lists them (empty where there is none: not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def native_bf16(device: str = "cpu", flags: frozenset[str] | None = None) -> bool:
    """Whether ``device`` computes bf16 natively (``flags``: a CPU's flags, default this one's)."""
    if device.startswith("cuda"):
        import torch

        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    return bool(NATIVE_BF16_FLAGS & (cpu_flags() if flags is None else flags))


def resolve_dtype(name: str, device: str = "cpu", flags: frozenset[str] | None = None) -> str:
    """``float32`` or ``bfloat16`` for ``name`` (one of ``DTYPES``; ``auto`` asks ``native_bf16``)."""
    if name not in DTYPES:
        raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {name!r}.")
    if name != "auto":
        return name
    return "bfloat16" if native_bf16(device, flags) else "float32"
