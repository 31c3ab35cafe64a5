"""What kind of image some bytes are, and its size, from the bytes alone (no image library):
the types Discord shows inline (PNG, JPEG, GIF, WebP). A tool's image is checked with it before
it is posted, and the stand-in Discord describes an upload with it as Discord does."""

from __future__ import annotations

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def sniff_content_type(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG, GIF, WebP or JPEG image; None for anything else."""
    kind = sniff_content_type(data)
    if kind == "image/png" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if kind == "image/gif" and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if kind == "image/webp":
        return _webp_size(data)
    if kind == "image/jpeg":
        return _jpeg_size(data)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8 " and len(data) >= 30:
        width = int.from_bytes(data[26:28], "little") & 0x3FFF
        return width, int.from_bytes(data[28:30], "little") & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """From the first start-of-frame marker (any SOFn but DHT, JPG and DAC)."""
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(data[at + 5 : at + 7], "big")
            return int.from_bytes(data[at + 7 : at + 9], "big"), height
        at += 2 + int.from_bytes(data[at + 2 : at + 4], "big")
    return None
