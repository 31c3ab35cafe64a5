"""The checks an image from a tool passes before it is attached: real image bytes of a type
Discord shows (whatever type the tool states), under the size limits, a bounded number."""

from __future__ import annotations

import base64

from bot.tools.tool_images import UPLOAD_LIMIT_BYTES, ImageShelf
from tests.fakes.mcp_server import png

GIF = b"GIF89a" + (3).to_bytes(2, "little") + (5).to_bytes(2, "little") + b"\x00" * 20


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_the_bytes_decide_the_type_not_the_tool() -> None:
    shelf = ImageShelf(max_images=4, max_bytes=UPLOAD_LIMIT_BYTES)
    said = shelf.take("paint", b64(GIF), "image/png")
    assert said == "[image attached: paint-1.gif, 3x5 image/gif from tool paint]"
    assert shelf.take("paint", b64(b"%PDF-1.7 ..."), "image/png").startswith(
        "[image not attached: not a PNG"
    )
    assert "not base64" in shelf.take("paint", "***", "image/png")
    assert [image.mime for image in shelf.images] == ["image/gif"]


def test_size_and_count_are_bounded() -> None:
    big = png(400, 400)
    shelf = ImageShelf(max_images=2, max_bytes=len(big) - 1)
    assert "over the limit" in shelf.take("paint", b64(big))
    assert shelf.take("paint", b64(png(4, 4))).startswith("[image attached: paint-1.png")
    assert shelf.take("my tool!", b64(png(4, 4))).startswith("[image attached: my-tool-2.png")
    assert "at most 2 images" in shelf.take("paint", b64(png(5, 5)))
    assert len(shelf.images) == 2 and shelf.images[0].size == len(png(4, 4))


def test_the_same_image_from_the_same_tool_is_kept_once() -> None:
    """A round run again (a retried request) returns the image again: attached once, and the
    model reads the same line for it."""
    shelf = ImageShelf(max_images=4, max_bytes=UPLOAD_LIMIT_BYTES)
    first = shelf.take("paint", b64(png(4, 4)))
    assert shelf.take("paint", b64(png(4, 4))) == first
    assert len(shelf.images) == 1
