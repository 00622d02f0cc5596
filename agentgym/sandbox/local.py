"""The ``local`` backend: no isolation at all. Explicit opt-in only, with a loud warning.

Calls still fork from a warm supervisor with rlimits, a wall-clock timeout and
output caps, in a private temporary working directory, but the code runs as
you, sees your files and your network. Use it only for code you trust (your own
tests, a machine that is itself a throwaway sandbox).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import warnings

from agentgym.errors import ConfigError
from agentgym.sandbox.base import Isolation, Limits
from agentgym.sandbox.zygote import ProcessChannel, ZygoteSandbox, zygote_argv

__all__ = ["LocalSandbox"]

_log = logging.getLogger(__name__)
_WARNING = ("agentgym: the 'local' sandbox backend runs untrusted code WITHOUT ISOLATION, as your user, "
            "with your files and network. Use the default 'bwrap' backend for model-written code.")


class LocalSandbox(ZygoteSandbox):
    """No isolation: rlimits, timeouts and output caps only. Needs ``allow_unsafe=True``."""

    backend = "local"

    def __init__(self, *, limits: Limits | None = None, isolation: Isolation = "episode",
                 preload: tuple[str, ...] = (), allow_unsafe: bool = False) -> None:
        if not allow_unsafe and os.environ.get("AGENTGYM_ALLOW_UNSAFE_SANDBOX") != "1":
            raise ConfigError("The 'local' sandbox runs code without isolation. Opt in explicitly with "
                              "allow_unsafe=True (or AGENTGYM_ALLOW_UNSAFE_SANDBOX=1), or use backend='bwrap'.")
        warnings.warn(_WARNING, RuntimeWarning, stacklevel=2)
        _log.warning(_WARNING)
        super().__init__(limits=limits, isolation=isolation, preload=preload)
        self.workdir = tempfile.mkdtemp(prefix="agentgym-local-")

    def _base_env(self) -> dict[str, str]:
        env = super()._base_env()
        env["HOME"] = env["TMPDIR"] = self.workdir
        return env

    def _nproc_base(self) -> int:
        return 4096  # no uid of its own: do not let the limit stop the user's other processes

    def _open(self) -> ProcessChannel:
        config = {"uid": None, "gid": None, "workdir": self.workdir, "pidns": False, "preload": list(self.preload)}
        return ProcessChannel(zygote_argv(sys.executable, config), self._base_env())

    def close(self) -> None:
        super().close()
        workdir = getattr(self, "workdir", None)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
