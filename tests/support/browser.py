"""A real headless Chromium, driven over the DevTools protocol (websockets through aiohttp), for
tests of a page a person opens: load it, collect every console error, uncaught exception and
blocked load, evaluate JavaScript in it, take a screenshot.

Chromium is Debian's package (`apt-get install -y chromium`, which `make install` runs when it is
missing); `chromium()` skips the test with the reason only where no binary can be found.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


def chromium() -> str:
    """The Chromium binary, or a skip saying why there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no chromium on PATH (`apt-get install -y chromium`; `make install` does it)")


class Page:
    """One tab of a headless Chromium that loaded `url`; `errors` holds every console error,
    uncaught exception and browser-logged error (a refused load, a CSP violation) of the page."""

    def __init__(self, url: str, *, width: int = 1200, height: int = 900) -> None:
        self.url = url
        self.size = (width, height)
        self.errors: list[str] = []
        self._ids = itertools.count(1)
        self._profile = tempfile.TemporaryDirectory(prefix="orlgen-chromium-")
        self._process: subprocess.Popen[str] | None = None
        self._loop = asyncio.new_event_loop()
        self._session: Any = None
        self._socket: Any = None
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._loaded: asyncio.Event | None = None
        self._reader: asyncio.Task[None] | None = None

    def __enter__(self) -> Page:
        self._process = subprocess.Popen(
            [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self._profile.name}",
             f"--window-size={self.size[0]},{self.size[1]}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        browser = self._browser_socket()
        self._loop.run_until_complete(self._open(browser))
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.run_until_complete(self._close())
        self._loop.close()
        assert self._process is not None
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._profile.cleanup()

    def _browser_socket(self) -> str:
        """The browser's DevTools address, as Chromium prints it on stderr when it listens."""
        assert self._process is not None and self._process.stderr is not None
        seen = []
        for line in self._process.stderr:
            seen.append(line)
            found = _LISTENING.search(line)
            if found:
                return found.group(1)
        raise RuntimeError("chromium exited before listening: " + "".join(seen)[-2000:])

    async def _open(self, browser: str) -> None:
        import aiohttp

        http = "http://" + browser.split("//", 1)[1].split("/", 1)[0]
        self._session = aiohttp.ClientSession()
        async with self._session.get(f"{http}/json/list") as answer:
            pages = [target for target in await answer.json() if target["type"] == "page"]
        self._socket = await self._session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        self._loaded = asyncio.Event()
        self._reader = asyncio.create_task(self._read())
        for domain in ("Runtime", "Log", "Page"):
            await self._send(f"{domain}.enable")
        await self._send("Page.navigate", url=self.url)
        await asyncio.wait_for(self._loaded.wait(), 30)

    async def _close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._socket is not None:
            await self._socket.close()
        if self._session is not None:
            await self._session.close()

    async def _read(self) -> None:
        async for message in self._socket:
            data = json.loads(message.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
            else:
                self._event(data.get("method", ""), data.get("params", {}))

    def _event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.loadEventFired" and self._loaded is not None:
            self._loaded.set()
        elif method == "Runtime.exceptionThrown":
            self.errors.append("exception: " + json.dumps(params["exceptionDetails"])[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append("console: " + json.dumps(params.get("args"))[:500])
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append("log: " + params["entry"].get("text", "")[:500])

    async def _send(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        future: asyncio.Future[Any] = self._loop.create_future()
        self._waiting[ident] = future
        await self._socket.send_str(json.dumps({"id": ident, "method": method, "params": params}))
        answer = await asyncio.wait_for(future, 30)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]  # type: ignore[no-any-return]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        result = self._loop.run_until_complete(
            self._send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def settle(self, seconds: float = 0.3) -> None:
        """Let the page run (late console messages arrive) for `seconds`."""
        self._loop.run_until_complete(asyncio.sleep(seconds))

    def screenshot(self, path: Path) -> Path:
        shot = self._loop.run_until_complete(
            self._send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
