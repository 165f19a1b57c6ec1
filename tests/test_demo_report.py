"""The report: real PNGs drawn by matplotlib and one HTML page that stands alone,
checked by parsing the page and every picture in it."""

from __future__ import annotations

import base64
import struct
import zlib
from html.parser import HTMLParser
from pathlib import Path

from PIL import Image

from npc_memory.demo import run_town, run_village
from npc_memory.demo.report import PICTURES, write_report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """Collects the page's images, headings and whether it references anything outside."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str | None]] = []
        self.headings: list[str] = []
        self.external: list[str] = []
        self._in_heading = False
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "img":
            self.images.append(found)
        if tag in ("h1", "h2"):
            self._in_heading = True
        for name in ("src", "href"):
            value = found.get(name)
            if value and not value.startswith(("data:", "#")):
                self.external.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h1", "h2"):
            self._in_heading = False

    def handle_data(self, data: str) -> None:
        if self._in_heading:
            self.headings.append(data)
        self.text.append(data)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, after checking signature and chunk CRC."""
    assert data[:8] == PNG_SIGNATURE
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16:29]
    (crc,) = struct.unpack(">I", data[29:33])
    assert zlib.crc32(kind + body) == crc
    width, height = struct.unpack(">II", body[:8])
    return width, height


def check_report(directory: Path) -> Page:
    page = Page()
    page.feed((directory / "index.html").read_text(encoding="utf-8"))
    assert page.external == []  # self-contained: no file, server or CDN needed
    assert len(page.images) == len(PICTURES)
    for image, (name, heading, _) in zip(page.images, PICTURES, strict=True):
        src = image["src"]
        assert src is not None and src.startswith("data:image/png;base64,")
        embedded = base64.b64decode(src.removeprefix("data:image/png;base64,"), validate=True)
        assert image["data-file"] == name and image["alt"] == heading
        on_disk = (directory / name).read_bytes()
        assert embedded == on_disk
        width, height = png_size(on_disk)
        assert width >= 600 and height >= 300
        with Image.open(directory / name) as picture:
            picture.load()  # decodes every row: a truncated or corrupt PNG fails here
            assert picture.size == (width, height)
            grey = picture.convert("L")
            lo, hi = grey.getextrema()
            assert hi - lo > 100 and sum(1 for n in grey.histogram() if n) > 8  # something was drawn
        assert heading in page.headings
    return page


def test_the_town_report_is_one_page_with_every_picture(tmp_path: Path) -> None:
    story = run_town(days=3, npcs=100, players=4, seed=2).story
    assert story is not None
    page_path = write_report(story, tmp_path / "report")
    assert page_path == tmp_path / "report" / "index.html"
    page = check_report(tmp_path / "report")
    text = "".join(page.text)
    assert story.headline in text and "Summary after 3 game days:" in text and "Day 3" in text
    deed = story.farthest()
    assert deed is not None and deed.victim  # the gossip picture draws the victim, and says so
    assert f"{story.name(deed.victim)}, who was wronged, is red." in " ".join(text.split())
    html_text = page_path.read_text()
    assert "white-space:pre-wrap" in html_text  # the summary's long rumour line wraps, never hides


def test_a_report_of_a_quiet_village_still_draws_every_picture(tmp_path: Path) -> None:
    # one day, one hour of action: hardly any rumour; the gossip picture says so instead
    story = run_village(days=1, seed=4, act_chance=0.0).story
    assert story is not None and not story.deeds
    write_report(story, tmp_path)
    check_report(tmp_path)
