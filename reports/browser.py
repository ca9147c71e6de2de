"""Driving a headless Chromium over the DevTools protocol, to check a report the way a reader sees it.

Only the standard library: a minimal WebSocket client (RFC 6455, text frames, client masking) is enough
for the DevTools protocol, so the tests need no browser-automation package. Chromium itself comes from
Debian's packages (``reports/ensure_chromium.sh``).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from typing import Any

ENSURE_SCRIPT = os.path.join(os.path.dirname(__file__), "ensure_chromium.sh")

# No network, no first-run or background services: the page must render from the file alone.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
]


def ensure_chromium() -> str:
    """The path of a Chromium binary, installing Debian's package when absent; raises RuntimeError with the reason."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    done = subprocess.run(["bash", ENSURE_SCRIPT], capture_output=True, text=True, timeout=900)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"chromium unavailable: {done.stderr.strip().splitlines()[-1:] or done.returncode}")
    return lines[-1]


class WebSocket:
    """A blocking WebSocket client for one ws:// URL (enough for the DevTools protocol)."""

    def __init__(self, url: str, timeout: float = 30.0):
        parsed = urllib.parse.urlparse(url)
        self._sock = socket.create_connection((parsed.hostname, parsed.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {parsed.path} HTTP/1.1\r\nHost: {parsed.hostname}:{parsed.port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self._sock.sendall(request.encode())
        response = b""
        while not response.endswith(b"\r\n\r\n"):
            chunk = self._sock.recv(1)
            if not chunk:
                raise ConnectionError("connection closed during the WebSocket handshake")
            response += chunk
        if b" 101 " not in response.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"WebSocket handshake refused: {response.splitlines()[0]!r}")

    def send(self, text: str) -> None:
        payload = text.encode()
        header = bytearray([0x81])  # FIN + text frame
        if len(payload) < 126:
            header.append(0x80 | len(payload))
        elif len(payload) < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
        mask = os.urandom(4)
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
        self._sock.sendall(bytes(header) + mask + masked)

    def receive(self) -> str:
        message = b""
        while True:
            first, second = self._exact(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack(">H", self._exact(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self._exact(8))[0]
            mask = self._exact(4) if second & 0x80 else None
            data = self._exact(length)
            if mask:
                data = bytes(byte ^ mask[i % 4] for i, byte in enumerate(data))
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("the browser closed the DevTools connection")
            if opcode in (0x9, 0xA):  # ping/pong carry no protocol messages
                continue
            message += data
            if first & 0x80:
                return message.decode()

    def _exact(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = self._sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the browser closed the connection")
            data += chunk
        return data

    def close(self) -> None:
        self._sock.close()


class Page:
    """One browser tab: protocol calls, and the console errors, exceptions and requests it has seen."""

    def __init__(self, socket_: WebSocket):
        self._ws = socket_
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        call_id = self._next_id
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.receive())
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def open(self, url: str, timeout: float = 30.0) -> None:
        """Navigate and wait for the load event, recording console and network events from the start."""
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", url=url)
        self.wait_for_event("Page.loadEventFired", timeout)

    def wait_for_event(self, method: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.events:
                if event.get("method") == method:
                    return event
            self.events.append(json.loads(self._ws.receive()))
        raise TimeoutError(f"no {method} within {timeout} s")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page (promises awaited); page exceptions raise."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page exception: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, and log entries at error level seen so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
                found.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append("exception: " + str(details.get("exception", {}).get("description") or details.get("text")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append("log: " + params["entry"].get("text", ""))
        return found

    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: str, width: int = 1440) -> None:
        """A full-page PNG at ``width`` CSS pixels."""
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)"))
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(shot["data"]))


class Chromium:
    """A headless Chromium with a fresh profile and the DevTools port open; use as a context manager."""

    def __init__(self, binary: str | None = None, width: int = 1440, height: int = 1000):
        self.binary = binary or ensure_chromium()
        self.size = (width, height)
        self._profile = tempfile.mkdtemp(prefix="report-chromium-")
        self._process: subprocess.Popen | None = None
        self._port = 0

    def __enter__(self) -> Chromium:
        command = [self.binary, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile}", "--remote-debugging-port=0",
                   f"--window-size={self.size[0]},{self.size[1]}", "about:blank"]
        log = open(os.path.join(self._profile, "chromium.log"), "wb")
        self._process = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        self._port = self._wait_for_port()
        return self

    def _wait_for_port(self, timeout: float = 30.0) -> int:
        # Chromium writes the port it picked to DevToolsActivePort in the profile once it listens.
        marker = os.path.join(self._profile, "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self._process.returncode}: {self.log_tail()}")
            if os.path.exists(marker):
                lines = open(marker, encoding="utf-8").read().split()
                if lines:
                    return int(lines[0])
            time.sleep(0.1)
        raise TimeoutError(f"chromium opened no DevTools port within {timeout} s: {self.log_tail()}")

    def log_tail(self) -> str:
        path = os.path.join(self._profile, "chromium.log")
        return open(path, encoding="utf-8", errors="replace").read()[-2000:] if os.path.exists(path) else ""

    def new_page(self) -> Page:
        deadline = time.monotonic() + 15
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{self._port}/json/list", timeout=10) as response:
                targets = [t for t in json.load(response) if t.get("type") == "page"]
            if targets or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if not targets:
            raise RuntimeError("chromium has no page target")
        return Page(WebSocket(targets[0]["webSocketDebuggerUrl"]))

    def __exit__(self, *exc_info) -> None:
        if self._process and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)


def run_headless(binary: str, url: str, *extra: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Chromium's one-shot command line mode (``--dump-dom``, ``--screenshot=``) with a fresh profile."""
    profile = tempfile.mkdtemp(prefix="report-chromium-")
    try:
        return subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, url],
                              capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
