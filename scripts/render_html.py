"""Open an HTML file in headless Chromium and report what a reader would see.

    python scripts/render_html.py audit.html --png audit.png

Prints JSON: the console errors and uncaught exceptions of the page, the
requests it tried to make beyond the file itself, how long it took to load
and lay out, and the answers to a few DOM questions (`--check NAME=SELECTOR`,
counted with `querySelectorAll`). Talks to the browser over the DevTools
protocol on a pipe (`--remote-debugging-pipe`), with the standard library
only. Exit 0 when the page loaded without an error, 1 otherwise, 2 when the
browser could not be run.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


class BrowserError(RuntimeError):
    pass


def find_browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


class DevTools:
    """The DevTools protocol over the browser's pipe (fd 3 in, fd 4 out,
    messages separated by NUL), one page session, events kept as they come."""

    def __init__(self, browser: str, profile: str) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def child_fds() -> None:
            # Copies above both first, so neither dup2 overwrites the other's source.
            inbound, outbound = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(inbound, 3)
            os.dup2(outbound, 4)

        self.proc = subprocess.Popen(
            [browser, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,  # the protocol needs the pipe on fds 3 and 4
            close_fds=False,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def send(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("the browser did not answer in time")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise BrowserError("the browser closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def close(self) -> None:
        self.session = None
        try:
            self.send("Browser.close", timeout=10)
        except (BrowserError, OSError):
            self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


def _errors(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            found.append(f"uncaught: {details.get('text', '')} {details.get('exception', {})}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append(f"console.{params['type']}: {params.get('args')}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            found.append(f"log: {params['entry'].get('text')}")
    return found


def render(
    html: Path, png: Path | None, checks: dict[str, str], width: int = 1400, height: int = 2200
) -> dict[str, Any]:
    browser = find_browser()
    if browser is None:
        raise BrowserError(f"no browser found (looked for {', '.join(BROWSERS)})")
    url = html.resolve().as_uri()
    with tempfile.TemporaryDirectory(
        prefix="syncscan-browser-", ignore_cleanup_errors=True
    ) as profile:
        tools = DevTools(browser, profile)
        try:
            targets = tools.send("Target.getTargets")["targetInfos"]
            page = next(t for t in targets if t["type"] == "page")
            attached = tools.send(
                "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}
            )
            tools.session = attached["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                tools.send(f"{domain}.enable")
            tools.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
            started = time.perf_counter()
            tools.send("Page.navigate", {"url": url})
            tools.wait_for("Page.loadEventFired", timeout=60)
            loaded = time.perf_counter() - started
            script = (
                "JSON.stringify({timing: performance.getEntriesByType('navigation')[0]"
                ".toJSON(), counts: Object.fromEntries(Object.entries("
                f"{json.dumps(checks)}).map(([k, s]) => [k, "
                "document.querySelectorAll(s).length]))})"
            )
            answer = tools.send("Runtime.evaluate", {"expression": script, "returnByValue": True})
            page_data = json.loads(answer["result"]["value"])
            if png is not None:
                shot = tools.send("Page.captureScreenshot", {"format": "png"}, timeout=60)
                png.write_bytes(base64.b64decode(shot["data"]))
            requests = sorted(
                {
                    e["params"]["request"]["url"]
                    for e in tools.events
                    if e.get("method") == "Network.requestWillBeSent"
                    and e["params"]["request"]["url"] != url
                }
            )
        finally:
            tools.close()
    timing = page_data["timing"]
    return {
        "url": url,
        "bytes": html.stat().st_size,
        "load_seconds": round(loaded, 3),
        "dom_content_loaded_ms": round(timing["domContentLoadedEventEnd"], 1),
        "load_event_ms": round(timing["loadEventEnd"], 1),
        "errors": _errors(tools.events),
        "requests": requests,
        "counts": page_data["counts"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", type=Path)
    parser.add_argument("--png", type=Path, help="write a screenshot here")
    parser.add_argument(
        "--check", action="append", default=[], metavar="NAME=SELECTOR",
        help="count the elements a CSS selector matches",
    )  # fmt: skip
    args = parser.parse_args(argv)
    checks = dict(item.split("=", 1) for item in args.check)
    try:
        report = render(args.html, args.png, checks)
    except (BrowserError, OSError) as exc:
        print(f"render_html: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2))
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
