"""Read a PDF the way a person and a machine do: its pages as pixels and its text.

pypdfium2 (PDFium, the renderer in Chromium) is a test-only dependency: each page is rendered
to an image, saved as PNG, and the text layer is extracted, so a test sees what a reader would.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium
from PIL import Image, ImageStat


@dataclass(frozen=True)
class Page:
    number: int
    png: Path
    text: str
    ink: float  # share of pixels that are not near-white
    colourful: float  # share of pixels that are clearly not grey


def read_pdf(data: bytes, out_dir: Path | None = None, *, scale: float = 1.0) -> list[Page]:
    """Every page of ``data``: rendered to PNG in ``out_dir`` (when given), its text, its ink."""
    document = pdfium.PdfDocument(data)
    pages: list[Page] = []
    try:
        for index in range(len(document)):
            page = document[index]
            image = page.render(scale=scale).to_pil().convert("RGB")
            text = page.get_textpage().get_text_range()
            png = Path()
            if out_dir is not None:
                out_dir.mkdir(parents=True, exist_ok=True)
                png = out_dir / f"page-{index + 1:03d}.png"
                image.save(png, "PNG")
            pages.append(Page(index + 1, png, text, _ink(image), _colourful(image)))
            page.close()
    finally:
        document.close()
    return pages


def pdf_text(data: bytes) -> str:
    """All text of a PDF, page after page."""
    document = pdfium.PdfDocument(data)
    try:
        return "\n".join(document[i].get_textpage().get_text_range() for i in range(len(document)))
    finally:
        document.close()


def _ink(image: Image.Image) -> float:
    grey = image.convert("L").point(lambda v: 255 if v < 235 else 0)
    return ImageStat.Stat(grey).mean[0] / 255


def _colourful(image: Image.Image) -> float:
    r, g, b = image.split()
    spread = Image.eval(
        Image.merge("RGB", (r, g, b)).convert("HSV").split()[1], lambda s: 255 if s > 90 else 0
    )
    return ImageStat.Stat(spread).mean[0] / 255
