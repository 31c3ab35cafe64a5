"""Images an answer's tools returned (MCP ``ImageContent``), kept to be posted with the answer.

A tool result may carry an image (base64 data and a MIME type). The model cannot be shown it as
text, so it reads a line instead (``[image attached: echo-1.png, 64x64 image/png from tool
draw]``), and the image is attached to the answer's last message. Checked before it is kept:
the bytes must be a PNG, JPEG, GIF or WebP image (the stated type is not trusted), at most
``[tools] max_image_bytes`` each and Discord's upload limit together, and at most
``[tools] max_images_per_answer`` of them; a refused one is a line saying why. The record keeps
each as a reference (name, type, size, SHA-256), never the bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass, field

from bot.tools.image_kind import image_size, sniff_content_type

UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024
"""What a bot may upload with one message in a server without boosts (all files together)."""
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class ToolImage:
    name: str  # the attachment's file name
    mime: str  # from the bytes
    data: bytes
    tool: str
    width: int | None = None
    height: int | None = None
    sha256: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha256", hashlib.sha256(self.data).hexdigest())

    @property
    def size(self) -> int:
        return len(self.data)

    def described(self) -> str:
        """The image as the model reads it, in the tool's result and the next request."""
        shape = f"{self.width}x{self.height} " if self.width and self.height else ""
        return f"[image attached: {self.name}, {shape}{self.mime} from tool {self.tool}]"

    def reference(self) -> str:
        """The image as the record keeps it: no bytes."""
        return f"{self.name} {self.mime} {self.size} bytes sha256:{self.sha256}"


class ImageShelf:
    """The images of one answer, in the order its tools returned them, under its limits. The
    shelf lives as long as the answer, across its refits and retried rounds: the same image from
    the same tool is kept once (a call run again would attach it twice)."""

    def __init__(self, max_images: int, max_bytes: int) -> None:
        self.max_images = max_images
        self.max_bytes = min(max_bytes, UPLOAD_LIMIT_BYTES)
        self.images: list[ToolImage] = []

    def take(self, tool: str, data: str, stated_type: str = "") -> str:
        """Keep a tool's image if it passes; what the model reads in its place either way."""
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError, TypeError):
            return f"[image not attached: its data is not base64 ({stated_type or 'no type'})]"
        mime = sniff_content_type(raw)
        if mime not in EXTENSIONS:
            return "[image not attached: not a PNG, JPEG, GIF or WebP image]"
        if len(raw) > self.max_bytes:
            return f"[image not attached: {len(raw)} bytes, over the limit of {self.max_bytes}]"
        digest = hashlib.sha256(raw).hexdigest()
        for kept in self.images:  # a call run again (a retried round): the image it kept
            if kept.tool == tool and kept.sha256 == digest:
                return kept.described()
        if len(self.images) >= self.max_images:
            return f"[image not attached: at most {self.max_images} images per answer]"
        if sum(image.size for image in self.images) + len(raw) > UPLOAD_LIMIT_BYTES:
            return "[image not attached: the answer's images would pass Discord's upload limit]"
        stem = NOT_A_NAME.sub("-", tool)[:40].strip("-") or "tool"
        size = image_size(raw)
        image = ToolImage(
            name=f"{stem}-{len(self.images) + 1}.{EXTENSIONS[mime]}",
            mime=mime,
            data=raw,
            tool=tool,
            width=size[0] if size else None,
            height=size[1] if size else None,
        )
        self.images.append(image)
        return image.described()
