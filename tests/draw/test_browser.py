"""The HTML report in a real browser: Debian's headless Chromium (installed
by `make system-deps` and `.ci/run`) loads `metis conform --report`'s page,
takes a screenshot, and dumps the DOM it built; the test checks that the
page rendered (a screenshot that is not blank) and shows every violation
with its drawing (the parsed page's text and its SVG nodes).

Chromium runs with the flags this closed network needs
(`--disable-background-networking` and friends: without them it keeps
trying to reach Google's hosts), in a new empty profile, in its own process
group, killed whole if it takes longer than `TIMEOUT_S`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_check import check_trace
from metis_cli._main import cli
from metis_trace import read_trace
from tests.draw._cases import cex_path

TIMEOUT_S = 120
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
)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (make system-deps installs Debian's chromium)")
        pytest.skip("chromium is not installed")
    return found


def _browse(page: Path, profile: Path, *args: str) -> bytes:
    command = [_chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
    ) as proc:
        try:
            out, _ = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"chromium took longer than {TIMEOUT_S} s")
        finally:
            # Its helper processes, left behind when the browser exits oddly.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, f"chromium exited {proc.returncode}"
    return out


def _png_rows(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the decompressed scanlines of a PNG (stdlib only)."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


class _Text(HTMLParser):
    """The page's visible text, and the classes of its SVG `g` elements."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.groups: list[set[str]] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("style", "title"):
            self._skip += 1
        if tag == "g":
            self.groups.append(set((dict(attrs).get("class") or "").split()))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "title"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.text.append(data.strip())


def _first_violation(path: Path) -> str:
    header, events = read_trace(path.read_text().splitlines())
    first = check_trace(events, header).first
    assert first is not None
    return first.message


def test_the_report_renders_in_chromium_and_shows_the_violations(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    traces = [str(cex_path(a)) for a in ("retry-after-commit", "exclusive-as-safe")]
    result = CliRunner().invoke(cli, ["conform", *traces, "--report", str(report)])
    assert result.exit_code == 1, result.output
    shot = tmp_path / "shot.png"
    _browse(report, tmp_path / "profile-1", "--window-size=1200,1600", f"--screenshot={shot}")
    width, height, rows = _png_rows(shot.read_bytes())
    assert (width, height) == (1200, 1600)
    # A blank page compresses to a handful of distinct byte values; this one is drawn.
    assert len(set(rows)) > 64

    dom = _browse(report, tmp_path / "profile-2", "--dump-dom").decode()
    page = _Text()
    page.feed(dom)
    text = "\n".join(page.text)
    assert "2 file(s):\n2 violates" in text
    messages = [_first_violation(Path(t)) for t in traces]
    for shown in (
        *messages,
        "RETRY-1",
        "SCHED-1",
        "committed=true",  # the fact RETRY-1 reads, inside the drawing
        "Coverage",
    ):
        assert shown in text, shown
    violating = [g for g in page.groups if {"node", "item", "violation"} <= g]
    assert len(violating) == 2  # one highlighted event per drawing, both in the DOM
    assert sum("legend" in g for g in page.groups) == 2
