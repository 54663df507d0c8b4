"""The HTML report in a real browser: headless Chromium opens it without console errors and shows a failed
trial's transcript after the page's script ran.

Chromium comes from Debian's ``chromium`` package. Where ``/usr/bin/chromium`` is missing the test installs it
with apt-get, but only as root and when ``CI`` is set or ``TAUSIM_INSTALL_CHROMIUM=1``; otherwise it is skipped
with the reason shown.

How the check works: ``chromium --headless --dump-dom URL`` prints the DOM after the page's scripts ran. The
page's script marks ``<body data-report-ready="1">`` when it finished, records any uncaught error in
``data-report-error``, and copies the trial named by the URL hash (or the first failed trial) into
``<div id="detail">``. Console messages appear on stderr (``--enable-logging=stderr``) as ``CONSOLE`` lines; the
page writes none, so any such line is an error. A page with a deliberate error proves that the check sees one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from simulator.report import analyze_run, render_html, trial_anchor
from tests._support.report_docs import FAILED_MARKER, INJECTED, small_document

_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0"]
_CONSOLE_RE = re.compile(r":CONSOLE[:(]|Uncaught", re.I)


def _find_chromium() -> str | None:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def chromium() -> str:
    path = _find_chromium()
    if path:
        return path
    allowed = os.environ.get("CI") or os.environ.get("TAUSIM_INSTALL_CHROMIUM") == "1"
    if not allowed:
        pytest.skip("chromium not found (/usr/bin/chromium); install Debian's chromium package, or set "
                    "TAUSIM_INSTALL_CHROMIUM=1 (as root) to let this test install it")
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("chromium not found and not root: cannot apt-get install chromium")
    if not shutil.which("apt-get"):
        pytest.skip("chromium not found and apt-get is not available to install it")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        subprocess.run("apt-get update -qq && apt-get install -y -qq chromium", shell=True, check=True,
                       capture_output=True, text=True, timeout=900, env=env)
    except (subprocess.SubprocessError, OSError) as e:
        detail = getattr(e, "stderr", "") or ""
        pytest.skip(f"chromium could not be installed with apt-get: {e} {detail[-500:]}")
    path = _find_chromium()
    if not path:
        pytest.skip("apt-get installed chromium but no chromium executable was found")
    return path


def _run(chromium: str, tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    return subprocess.run([chromium, *_FLAGS, f"--user-data-dir={profile}", *extra, url], capture_output=True,
                          text=True, timeout=120, check=False)


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if _CONSOLE_RE.search(line)]


def _body_tag(dom: str) -> str:
    match = re.search(r"<body[^>]*>", dom)
    assert match, dom[:2000]
    return match.group(0)


def _detail(dom: str) -> str:
    start = dom.index('id="detail"')
    end = dom.index('id="trials"', start)
    return dom[start:end]


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "report.html"
    path.write_text(render_html(analyze_run(small_document())), encoding="utf-8")
    return path


def test_report_opens_without_console_errors_and_shows_failed_transcript(chromium, tmp_path, page):
    # No hash: the page opens the first failed trial (a/2); a hash names the one to open (b/0).
    res = _run(chromium, tmp_path, page.as_uri(), "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    assert _console_errors(res.stderr) == []
    body = _body_tag(res.stdout)
    assert 'data-report-ready="1"' in body and "data-report-error" not in body
    assert 'data-open-trial="a/2"' in body
    assert "hello from a/2" in _detail(res.stdout)

    res = _run(chromium, tmp_path, f"{page.as_uri()}#{trial_anchor('b', 0)}", "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    assert _console_errors(res.stderr) == []
    body = _body_tag(res.stdout)
    assert 'data-report-ready="1"' in body and "data-report-error" not in body
    assert 'data-open-trial="b/0"' in body
    detail = _detail(res.stdout)
    assert FAILED_MARKER in detail
    assert "get_order_details" in detail and "tool_error" in detail
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in detail and INJECTED not in res.stdout

    shot = tmp_path / "report.png"
    res = _run(chromium, tmp_path, f"{page.as_uri()}#{trial_anchor('b', 0)}", f"--screenshot={shot}",
               "--window-size=1280,2000")
    assert res.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _console_errors(res.stderr) == []


def test_the_console_check_sees_errors(chromium, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>")
    res = _run(chromium, tmp_path, bad.as_uri(), "--dump-dom")
    assert any("undefinedFunction" in line for line in _console_errors(res.stderr)), res.stderr[-2000:]
