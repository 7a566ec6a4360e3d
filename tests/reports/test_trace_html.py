"""The HTML trace is one self-contained page that a real browser renders (headless Chromium screenshot)."""

from __future__ import annotations

import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from factories import DOC, record, write_results

from stepgraph.dsl.reports.cli import main

CHROMIUM = Path("/usr/bin/chromium")


class _ExternalRefs(HTMLParser):
    """Collects every attribute that would make the browser fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.fetches: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.append(values["id"] or "")
        for name in ("src", "href"):
            value = values.get(name) or ""
            if value and not value.startswith("#"):
                self.fetches.append(f"<{tag} {name}={value}>")
        if tag == "link":
            self.fetches.append("<link>")


@pytest.fixture
def html(tmp_path: Path) -> Path:
    doc = tmp_path / "plan.md"
    doc.write_text(DOC)
    run = write_results(tmp_path / "r.json", [record("B1"), record("B2", "failed"), record("S1", "skipped", ["8.5.1"]),
                                              record("B1", "passed", world="conflict")])
    assert main(["--design", str(doc), "--results", str(run), "--out", str(tmp_path / "out"), "--format", "html"]) == 0
    return tmp_path / "out" / "trace.html"


def test_html_fetches_nothing_and_escapes_text(html: Path, tmp_path: Path) -> None:
    parser = _ExternalRefs()
    parser.feed(html.read_text())
    assert parser.fetches == []
    assert "url(" not in html.read_text()
    assert {"req-1-B1", "req-1-B2", "req-1-8.5.1"} <= set(parser.ids)
    doc = tmp_path / "evil.md"
    doc.write_text("# E\n\n| ID | What |\n|---|---|\n| A1 | <script>alert(1)</script> |\n")
    assert main(["--design", str(doc), "--results", str(tmp_path / "r.json"), "--out", str(tmp_path / "e"), "--format", "html",
                 "--allow-orphans"]) == 0
    assert "<script>" not in (tmp_path / "e" / "trace.html").read_text()


def _png_pixels(path: Path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, width, height, idat = 8, 0, 0, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium is not installed at /usr/bin/chromium (Debian package `chromium`)")
def test_headless_chromium_renders_the_page(html: Path, tmp_path: Path) -> None:
    flags = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,900"]
    dom = subprocess.run([*flags, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120, check=True)
    assert "stepgraph trace" in dom.stdout and "req-1-8.5.1" in dom.stdout
    shot = tmp_path / "trace.png"
    subprocess.run([*flags, f"--screenshot={shot}", html.as_uri()], capture_output=True, timeout=120, check=True)
    width, height, pixels = _png_pixels(shot)
    assert (width, height) == (1280, 900)
    assert len(set(pixels)) > 64, "the screenshot is (nearly) blank"
