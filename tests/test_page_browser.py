"""The demo evening's page in a real browser (Debian's headless Chromium).

The page is loaded once, with two small scripts added to a copy of it: one at the top of <head>
that records every error and console.error into the DOM, and one after the page's own script that
clicks every link to a source, the way a reader would, and writes down what the panel then shows.
`--dump-dom` hands back the DOM after both ran. All traffic goes through a proxy on loopback that
answers nothing and records every request: the page must make none.

Without Chromium the test skips, saying so; with PREDIGEST_REQUIRE_BROWSER=1 it fails instead.
"""

from __future__ import annotations

import fcntl
import html as htmlmod
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas.run import RunRecord
from tests.test_page import demo_page

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
]

RECORD_ERRORS = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push("error: " + e.message); });
document.addEventListener("securitypolicyviolation", function (e) {
  window.__errors.push("blocked request: " + e.blockedURI + " (" + e.violatedDirective + ")");
});
(function () {
  var original = console.error;
  console.error = function () {
    window.__errors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
})();
</script>"""

# Clicks every trace link and records: which document the panel shows, whether the panel is on
# screen, and the text of the highlighted marks for each span id the link names.
PROBE = """<script>
(function () {
  var out = {links: [], verify: [], errors: null, keyboard: []};
  var panel = document.getElementById("panel");
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });  // as a reader unfolds them
  document.querySelectorAll("a.trace[data-doc]").forEach(function (a, i) {
    a.click();
    var shown = panel.querySelectorAll(".doc.shown");
    var spans = {};
    (a.getAttribute("data-spans") || "").split(" ").forEach(function (id) {
      if (!id) return;
      var marks = shown.length ? shown[0].querySelectorAll('mark.on[data-s~="' + id + '"]') : [];
      spans[id] = Array.prototype.map.call(marks, function (m) { return m.textContent; }).join("");
    });
    var article = a.closest("article");
    out.links.push({
      i: i,
      where: article ? article.id : (a.closest("section,details") || {}).id || "",
      cls: a.className,
      doc: a.getAttribute("data-doc"),
      shown: Array.prototype.map.call(shown, function (d) { return d.id; }),
      visible: getComputedStyle(panel).display !== "none" && panel.getBoundingClientRect().width > 0,
      spans: spans,
      label: document.getElementById("panel-kinds").textContent
    });
    document.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape"}));
    if (document.body.classList.contains("panel-open")) out.keyboard.push(i + ": Escape left the panel open");
    if (document.activeElement !== a) out.keyboard.push(i + ": focus not returned");
  });
  document.querySelectorAll("article.verify").forEach(function (v) {
    out.verify.push({
      id: v.id,
      incs: Array.prototype.map.call(v.querySelectorAll('a[href^="#inc-"]'), function (a) {
        var target = document.querySelector(a.getAttribute("href"));
        return {href: a.getAttribute("href"), back: !!(target && target.querySelector('a[href="#' + v.id + '"]'))};
      }),
      carried: !!v.querySelector(".carried")
    });
  });
  out.errors = window.__errors;
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path:
        return path
    if os.environ.get("PREDIGEST_REQUIRE_BROWSER") == "1":
        pytest.fail("PREDIGEST_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
    pytest.skip("no chromium on PATH: the browser checks of the page need Debian's chromium (apt-get install chromium)")


class RefusingProxy:
    """An HTTP proxy on 127.0.0.1 that records the first line of every request and refuses it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.requests: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> RefusingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    first = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                except OSError:
                    first = "(no request line)"
                self.requests.append(first)
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunRecord, Path]:
    return demo_page(tmp_path_factory.mktemp("browser"))


# Chromium's own services (component updates, network time, sign-in), which it calls on an empty
# page too, whatever the flags: not the page's requests. Anything else reaching the proxy is.
BROWSER_SERVICES = re.compile(
    r"^(?:CONNECT |[A-Z]+ https?://)[\w.-]*\b(?:google\.com|googleapis\.com|gstatic\.com)[:/]"
)

CONTROL = """<!doctype html><html><head>{csp}{record}
<link rel="stylesheet" href="https://fonts.example.invalid/cjk.css"></head>
<body><img src="https://images.example.invalid/x.png" alt="">
<script>
window.addEventListener("load", function () {{
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify({{errors: window.__errors}});
  document.body.appendChild(pre);
}});
</script>
</body></html>"""


BROWSER_DEADLINE_S = 120  # what one headless Chromium may take for its pages, on a machine under load


def dump_dom(
    chromium: str, page: Path, profile: Path, *flags: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Load `page` in headless Chromium behind a proxy that refuses everything; the finished
    process (its stdout is the DOM the browser built) and the requests that tried to leave."""
    with RefusingProxy() as proxy:
        r = subprocess.run(
            [
                chromium,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--proxy-server=http://127.0.0.1:{proxy.port}",
                "--proxy-bypass-list=<-loopback>",
                *flags,
                "--virtual-time-budget=2000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=BROWSER_DEADLINE_S,
        )
    return r, proxy.requests


class _Pipe:
    """Chromium's DevTools protocol over --remote-debugging-pipe: JSON messages, each ended by a
    NUL byte, written to the browser's fd 3 and read from its fd 4."""

    def __init__(self, to_browser: int, from_browser: int) -> None:
        self.to_browser, self.from_browser = to_browser, from_browser
        self.buffer = b""  # what has been read of a message not yet ended
        self.events: list[dict[str, Any]] = []  # events read while waiting for an answer, not yet taken
        self.next_id = 0

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([self.from_browser], [], [], wait)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed its pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None, deadline: float, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer; the events that arrive meanwhile are kept."""
        self.next_id += 1
        sent: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            sent["sessionId"] = session
        data = json.dumps(sent).encode() + b"\0"
        while data:  # a pipe may take part of a write
            data = data[os.write(self.to_browser, data) :]
        while True:
            got = self._read(deadline)
            if got.get("id") == self.next_id:
                assert "error" not in got, (method, got["error"])
                return got.get("result", {})
            self.events.append(got)

    def wait_for(self, method: str, session: str, deadline: float) -> None:
        """Wait for (and take) the first event `method` of `session`."""
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self.events[i]
                    return
            self.events.append(self._read(deadline))


def browse_pages(
    chromium: str, pages: list[Path], profile: Path, script: str, width: int | None = None
) -> tuple[list[Any], str, list[str]]:
    """Open each page top-level, one after the other in one tab of one headless Chromium behind a
    proxy that refuses everything, as a reader opens it (no flag that widens what a file page may
    do); once it has loaded, evaluate `script` in it (DevTools evaluation: the page's content
    policy does not block it). With `width`, the tab's viewport is that many CSS pixels wide,
    narrower than a headless window can be. What `script` gave for each page, Chromium's log,
    and the requests that tried to leave."""
    browser_reads, to_browser = os.pipe()
    from_browser, browser_writes = os.pipe()
    # the browser's ends moved above 4, so that placing one at 3 or 4 cannot overwrite the other
    low = (browser_reads, browser_writes)
    browser_reads, browser_writes = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in low)
    for fd in low:
        os.close(fd)

    results: list[Any] = []
    with RefusingProxy() as proxy, tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        # a small launcher puts the browser's ends of the two pipes where --remote-debugging-pipe
        # looks, 3 and 4, and becomes the browser (dash, Debian's sh, names no fd above 9)
        browser = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
                "os.execv(sys.argv[3], sys.argv[3:])",
                str(browser_reads),
                str(browser_writes),
                chromium,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--proxy-server=http://127.0.0.1:{proxy.port}",
                "--proxy-bypass-list=<-loopback>",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            pass_fds=(browser_reads, browser_writes),
        )
        os.close(browser_reads)
        os.close(browser_writes)
        pipe = _Pipe(to_browser, from_browser)
        deadline = time.monotonic() + BROWSER_DEADLINE_S
        try:
            tab = pipe.call("Target.createTarget", None, deadline, url="about:blank")["targetId"]
            session = pipe.call("Target.attachToTarget", None, deadline, targetId=tab, flatten=True)["sessionId"]
            pipe.call("Page.enable", session, deadline)
            if width:
                pipe.call(
                    "Emulation.setDeviceMetricsOverride", session, deadline,
                    width=width, height=600, deviceScaleFactor=1, mobile=False,
                )  # fmt: skip
            for page in pages:
                went = pipe.call("Page.navigate", session, deadline, url=page.as_uri())
                assert not went.get("errorText"), (page, went)  # else the probe would read Chromium's error page
                pipe.wait_for("Page.loadEventFired", session, deadline)
                done = pipe.call("Runtime.evaluate", session, deadline, expression=script, returnByValue=True)
                assert "exceptionDetails" not in done, done["exceptionDetails"]
                results.append(done["result"].get("value"))
            pipe.call("Browser.close", None, deadline)
            browser.wait(timeout=30)
        except TimeoutError as e:  # an OSError too: said first, since the browser is still running
            log.seek(0)
            raise AssertionError(f"chromium gave no answer within {BROWSER_DEADLINE_S} s: {log.read()[-3000:]}") from e
        except (OSError, EOFError) as e:
            log.seek(0)
            raise AssertionError(f"chromium exited {browser.poll()}: {log.read()[-3000:]}") from e
        finally:
            if browser.poll() is None:
                browser.kill()
                browser.wait()
            os.close(to_browser)
            os.close(from_browser)
        log.seek(0)
        return results, log.read(), proxy.requests


def _browse(chromium: str, page: Path, profile: Path) -> tuple[dict, str, list[str]]:
    """Load `page` once; return what its probe wrote, Chromium's log and the requests that left it."""
    r, requests = dump_dom(chromium, page, profile, "--window-size=1400,1000")
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout, re.S)
    assert m, f"chromium exited {r.returncode}; the probe did not run: {r.stderr[-2000:]}"
    return json.loads(htmlmod.unescape(m.group(1))), r.stderr, requests


@pytest.fixture(scope="module")
def browsed(demo: tuple[RunRecord, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    chromium = _chromium()
    _, page = demo
    tmp = tmp_path_factory.mktemp("chromium")
    text = page.read_text(encoding="utf-8")
    probed = text.replace("<head>", "<head>" + RECORD_ERRORS, 1).replace("</body>", PROBE + "</body>", 1)
    copy = tmp / page.name
    copy.write_text(probed, encoding="utf-8")
    probe, stderr, requests = _browse(chromium, copy, tmp / "profile")
    yield {"probe": probe, "stderr": stderr, "requests": requests}


def test_every_increments_quotes_are_highlighted_in_its_source_panel(
    demo: tuple[RunRecord, Path], browsed: dict
) -> None:
    rec, _ = demo
    spans = {s.id: s for s in rec.spans}
    texts = {d.path: d.text for d in rec.documents}
    doc_ids = {d.path: f"doc-{i}" for i, d in enumerate(rec.documents)}
    links = browsed["probe"]["links"]
    assert all(link["visible"] and link["shown"] == [link["doc"]] for link in links)
    for it in rec.trace.increments:
        claim_links = [x for x in links if x["where"] == f"inc-{it.number}" and "claim" in x["cls"].split()]
        assert len(claim_links) == len(it.claims), it.number
        for link, claim in zip(claim_links, it.claims, strict=True):
            assert link["doc"] == doc_ids[claim.doc]
            assert set(link["spans"]) == set(claim.spans)
            for sid, shown in link["spans"].items():
                s = spans[sid]
                assert shown == texts[s.doc][s.start : s.end], (it.number, s.quote)
            assert link["label"].startswith(("exact", "folded", "fuzzy"))
        # each key point's link lands on at least one highlighted quote of the same increment
        points = [x for x in links if x["where"] == f"inc-{it.number}" and "pt" in x["cls"].split()]
        assert len(points) == len(it.points)
        assert all(p["spans"] and all(p["spans"].values()) for p in points)


def test_every_source_link_opens_its_document(demo: tuple[RunRecord, Path], browsed: dict) -> None:
    rec, _ = demo
    links = browsed["probe"]["links"]
    from_block_one = [x for x in links if x["where"] == "sources"]
    assert len(from_block_one) >= len(rec.briefing.sources)
    assert all(x["shown"] == [x["doc"]] for x in from_block_one)
    removed = [x for x in links if x["where"] == "removed"]
    assert len(removed) == len(rec.trace.removed)
    assert all(all(v for v in x["spans"].values()) for x in removed)


def test_every_to_verify_item_links_to_an_increment_or_says_carried(
    demo: tuple[RunRecord, Path], browsed: dict
) -> None:
    rec, _ = demo
    items = browsed["probe"]["verify"]
    assert len(items) == len(rec.briefing.to_verify)
    for v in items:
        assert v["incs"] or v["carried"], v["id"]
        assert all(i["back"] for i in v["incs"]), v  # and the increment links back to the item


def test_no_request_and_no_console_error(browsed: dict) -> None:
    assert [r for r in browsed["requests"] if not BROWSER_SERVICES.match(r)] == []
    assert browsed["probe"]["errors"] == []  # no error, no console.error, no request the page's policy refused
    assert browsed["probe"]["keyboard"] == []  # Escape closes the panel and focus returns to the link
    console = [ln for ln in browsed["stderr"].splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert console == []


def test_the_checks_see_a_page_that_would_load_something(demo: tuple[RunRecord, Path], tmp_path: Path) -> None:
    """The same head (its content policy) with a stylesheet and an image from the network: the
    probe reports both as refused, and neither reaches the network."""
    chromium = _chromium()
    _, page = demo
    csp = re.search(r'<meta http-equiv="Content-Security-Policy"[^>]*>', page.read_text(encoding="utf-8"))
    assert csp, "the page declares that it loads nothing"
    control = tmp_path / "control.html"
    control.write_text(CONTROL.format(csp=csp.group(), record=RECORD_ERRORS), encoding="utf-8")
    probe, _, requests = _browse(chromium, control, tmp_path / "profile")
    blocked = " ".join(probe["errors"])
    assert "https://images.example.invalid/x.png" in blocked and "https://fonts.example.invalid/cjk.css" in blocked
    assert not [r for r in requests if "example.invalid" in r]
