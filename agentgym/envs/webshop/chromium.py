"""The browser: Playwright and one shared Chromium per process, driven from a private event-loop thread."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import re
import shutil
import threading
from collections.abc import Coroutine, Mapping
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled, ToolError

__all__ = ["CHROMIUM_ARGS", "INSTALL_PLAYWRIGHT", "SHOP_HOST", "SHOP_ORIGIN", "Chromium", "describe_error",
           "find_chromium", "shared_chromium", "viewport_size"]

SHOP_HOST = "webshop.test"
SHOP_ORIGIN = f"http://{SHOP_HOST}"
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run")
INSTALL_PLAYWRIGHT = "pip install 'agentgym-suite[browser]'"
_INSTALL_CHROMIUM = "apt-get install chromium (or pass chromium_path=..., or set AGENTGYM_CHROMIUM)"


def _driver_in_own_session() -> None:
    """Start Playwright's driver (a node process) in a session of its own, as Chromium already is.

    Ctrl-C in a terminal signals the whole foreground process group: the driver, in
    ours, would die and take the browser's connection with it, failing the episodes
    that the eval's Ctrl-C handler lets finish. Playwright has no option for this, so
    the module it spawns the driver from gets an ``asyncio`` whose
    ``create_subprocess_exec`` adds ``start_new_session=True``; nothing else changes.
    """
    import types

    try:
        from playwright._impl import transport
    except ImportError:  # a Playwright laid out otherwise: its driver stays in our process group
        return
    real = transport.asyncio
    if getattr(real, "_agentgym_own_session", False):
        return

    async def spawn(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("start_new_session", True)
        return await real.create_subprocess_exec(*args, **kwargs)

    proxy = types.SimpleNamespace(**{name: getattr(real, name) for name in dir(real) if not name.startswith("__")})
    proxy.create_subprocess_exec, proxy._agentgym_own_session = spawn, True
    transport.asyncio = proxy


class Chromium:
    """Playwright and one Chromium on a private event-loop thread (see ``browser.py``'s docstring)."""

    def __init__(self, executable: str, *, headless: bool, shop_port: int, launch_timeout_s: float = 60.0) -> None:
        self._pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="agentgym-chromium", daemon=True)
        self._thread.start()
        self._playwright: Any = None
        rules = f"MAP {SHOP_HOST}:80 127.0.0.1:{shop_port}, MAP * ~NOTFOUND"
        try:
            self.browser = self.run(self._launch(executable, headless, rules), timeout_s=launch_timeout_s)
        except ToolError:
            self._stop_loop()
            raise

    async def _launch(self, executable: str, headless: bool, rules: str) -> Any:
        from playwright.async_api import async_playwright

        _driver_in_own_session()
        self._playwright = await async_playwright().start()
        try:
            # handle_sigint=False: Ctrl-C in the terminal reaches our handler (episodes in flight finish and are
            # saved), not the browser, which would close under them
            return await self._playwright.chromium.launch(executable_path=executable, headless=headless,
                                                          handle_sigint=False,
                                                          args=[*CHROMIUM_ARGS, f"--host-resolver-rules={rules}"])
        except BaseException:
            await self._playwright.stop()  # and its driver process with it
            raise

    @property
    def is_alive(self) -> bool:
        return self._pid == os.getpid() and self._thread.is_alive() and self.browser.is_connected()

    def run(self, coro: Coroutine[Any, Any, Any], *, timeout_s: float) -> Any:
        """Run ``coro`` on the browser's loop and wait; Playwright failures become ``ToolError``."""
        from playwright.async_api import Error as PlaywrightError

        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("Browser calls cannot be made from the browser's own thread.")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError as e:
            future.cancel()
            raise ToolError(f"The browser did not answer within {timeout_s:.0f} s.") from e
        except PlaywrightError as e:
            raise ToolError(f"The browser failed: {describe_error(e)}") from e

    def close(self) -> None:
        if self._pid != os.getpid() or not self._thread.is_alive():
            return  # a forked child does not own this browser

        async def shutdown() -> None:
            try:
                await self.browser.close()
            finally:
                await self._playwright.stop()

        try:
            self.run(shutdown(), timeout_s=10)
        except ToolError:
            pass  # already gone: nothing left to release
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


_chromiums: dict[tuple[int, str, bool, int], Chromium] = {}
_chromiums_lock = threading.Lock()


def shared_chromium(executable: str, *, headless: bool, shop_port: int) -> Chromium:
    """This process's browser for these settings: launched on first use, relaunched if it died, closed at exit."""
    key = (os.getpid(), executable, headless, shop_port)
    with _chromiums_lock:
        chromium = _chromiums.get(key)
        if chromium is None or not chromium.is_alive:
            if chromium is not None:
                chromium.close()  # it crashed or was closed: release what is left of it
            chromium = Chromium(executable, headless=headless, shop_port=shop_port)
            atexit.register(chromium.close)
            _chromiums[key] = chromium
        return chromium


def describe_error(error: Exception) -> str:
    """Playwright's message without its API prefix and call log; a timeout says what it waited for."""
    text = str(getattr(error, "message", error))
    head, _, log = text.partition("Call log:")
    head = re.sub(r"^\w+\.\w+: ", "", head.strip()).removeprefix("Error: ").strip()
    waited = [line.strip(" -") for line in log.splitlines() if line.strip()]
    if "Timeout" in head and waited:
        head += f" (last step: {waited[-1]})"
    return head


def find_chromium(path: str | os.PathLike[str] | None) -> str:
    """The Chromium executable: ``path``, else ``$AGENTGYM_CHROMIUM``, else ``chromium`` on ``PATH``."""
    found = path or os.environ.get("AGENTGYM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found or not os.access(found, os.X_OK):
        raise DependencyNotInstalled(f"Chromium ({found or 'not on PATH'})", _INSTALL_CHROMIUM)
    return str(found)


def viewport_size(viewport: tuple[int, int] | Mapping[str, int]) -> dict[str, int]:
    """``(width, height)`` or ``{"width", "height"}`` as Playwright's viewport, checked."""
    size = (viewport.get("width"), viewport.get("height")) if isinstance(viewport, Mapping) else tuple(viewport)
    if len(size) != 2 or not all(isinstance(n, int) and n > 0 for n in size):
        raise ConfigError(f"viewport must be (width, height) in positive pixels, got {viewport!r}.")
    return {"width": size[0], "height": size[1]}
