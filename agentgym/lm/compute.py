"""What a local model's greedy text depends on besides its weights: the kernel path its numbers take.

Greedy decoding is deterministic on one machine for one batch, but not across either: the matrix kernels
torch picks (by CPU vendor and instruction set, by thread count, by the batch's shapes) sum in different orders,
and a near-tie between two tokens can then go either way. Measured: on an AMD EPYC (Zen 4) a MathTool episode
played in a batch of 3 wrote "...saved by Ch" where the same episode alone wrote "...saved.\\n", and SearchQA's
first query came out "Capital of France" where an Intel Xeon wrote "capital of France". So agentgym does not
claim batch-invariant decoding; it records the path instead (``kernel_path``) with each episode, together with
the batch it was played in, and a run whose episodes took more than one path is not flagged reproducible
(``agentgym.eval.leaderboard``). How often transcripts and scores agree across batch sizes and CPUs:
``python scripts/batch_agreement.py`` and docs/eval.md.
"""

from __future__ import annotations

import os
import platform
from functools import lru_cache
from pathlib import Path

__all__ = ["cpu_model", "kernel_path"]

_ISA_VARIABLES = ("MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


@lru_cache(maxsize=1)
def cpu_model() -> tuple[str, str]:
    """(vendor id, model name) of this CPU as ``/proc/cpuinfo`` gives them; ("", "") where there is none."""
    vendor = model = ""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return vendor, model
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "vendor_id" and not vendor:
            vendor = value.strip()
        elif key == "model name" and not model:
            model = value.strip()
        if vendor and model:
            break
    return vendor, model


def kernel_path(device: str = "cpu", *, threads: int | None = None) -> str:
    """The kernel path a model's numbers take on ``device``, as one line for results and fingerprints.

    On a CPU: the architecture, the vendor (MKL and oneDNN dispatch on it), the instruction set torch's kernels
    use (``torch.backends.cpu.get_cpu_capability``), the torch version and the intra-op threads; on a GPU: its
    name and compute capability, the CUDA and torch versions.

    >>> kernel_path().startswith(platform.machine())
    True
    """
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index or 0
        major, minor = torch.cuda.get_device_capability(index)
        return (f"cuda {torch.cuda.get_device_name(index)} sm_{major}{minor} cuda {torch.version.cuda} "
                f"torch {torch.__version__}")
    vendor, _ = cpu_model()
    capability = torch.backends.cpu.get_cpu_capability()
    threads = torch.get_num_threads() if threads is None else threads
    # the BLAS libraries' own instruction-set caps, where set: they change the kernels as much as the CPU does
    caps = "".join(f" {name}={os.environ[name]}" for name in _ISA_VARIABLES if os.environ.get(name))
    return (f"{platform.machine()} {vendor or 'unknown-vendor'} {capability} torch {torch.__version__} "
            f"threads {threads}{caps}")
