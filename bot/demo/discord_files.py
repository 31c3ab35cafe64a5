"""Files the bot attaches to its messages: read from the multipart body, kept with their bytes,
served back at a local URL, described in the message's ``attachments`` as Discord describes them.

nextcord sends files as Discord documents it (``multipart/form-data``: a ``payload_json`` part
and one ``files[n]`` part per file, each matched to ``{"id": n, …}`` in the payload's
``attachments``) and always labels them ``application/octet-stream``; Discord finds the real
type itself, and so does the stand-in (from the bytes for PNG, JPEG, GIF and WebP, whose width
and height it also gives, else from the name), so a test can tell an image arrived as one.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import BodyPartReader, web

from bot.demo.discord_state import ApiError, Payload, invalid_form
from bot.tools.image_kind import image_size, sniff_content_type

ATTACHMENTS_PATH = "/attachments/{channel_id}/{attachment_id}/{filename}"
MAX_FILES = 10
MAX_FILE_BYTES = 10 * 1024 * 1024  # a bot's upload limit in a server without boosts
UNSAFE_IN_FILENAME = re.compile(r"[^\w.\-]")


@dataclass(frozen=True)
class Upload:
    """One ``files[n]`` part of a request, as the client sent it."""

    index: int
    filename: str
    data: bytes


@dataclass(frozen=True)
class StoredFile:
    channel_id: str
    attachment_id: str
    filename: str
    content_type: str | None
    data: bytes


async def read_multipart(request: web.Request) -> tuple[Any, tuple[Upload, ...]]:
    """The JSON of ``payload_json`` and the files of a multipart request."""
    body: Any = None
    uploads: list[Upload] = []
    reader = await request.multipart()
    async for part in reader:
        if not isinstance(part, BodyPartReader):  # a nested multipart: not Discord's form
            raise ApiError(400, 50035, "Invalid Form Body")
        if part.name == "payload_json":
            body = json.loads(await part.text())
            continue
        match = re.fullmatch(r"files\[(\d+)\]", part.name or "")
        data = bytes(await part.read())
        if match is None:
            continue  # Discord ignores parts it has no use for
        if len(data) > MAX_FILE_BYTES:
            raise ApiError(413, 40005, "Request entity too large")
        uploads.append(Upload(int(match[1]), part.filename or part.name or "file", data))
    if len(uploads) > MAX_FILES:
        raise invalid_form(
            "files", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_FILES} or fewer in length."
        )
    return body, tuple(uploads)


class Attachments:
    """Every file attached to a message, served at ``base_url`` + :data:`ATTACHMENTS_PATH`."""

    def __init__(self, mint: Callable[[], int]) -> None:
        self._mint = mint
        self.base_url = ""  # set by the server once it knows its port
        self.files: dict[str, StoredFile] = {}

    def for_message(
        self,
        channel_id: str,
        uploads: Sequence[Upload],
        described: list[Payload] | None,
        *,
        kept: Sequence[Payload] = (),
        ephemeral: bool = False,
    ) -> list[Payload]:
        """The ``attachments`` of a message posted (or edited) with these files.

        ``described``: the payload's ``attachments`` (new files' ``filename`` and
        ``description`` by their ``files[n]`` index; on an edit, the ids of the old ones to
        keep). ``kept``: an edited message's current attachments, all kept when ``described``
        is None, as Discord keeps them.
        """
        entries = {str(entry.get("id")): entry for entry in described or []}
        result = [a for a in kept if described is None or str(a["id"]) in entries]
        for upload in uploads:
            entry = entries.get(str(upload.index), {})
            name = entry.get("filename") or upload.filename
            result.append(
                self._store(channel_id, upload.data, name, entry.get("description"), ephemeral)
            )
        return result

    def data(self, attachment: Payload | str) -> bytes:
        """The bytes of an attachment (its payload, or its id)."""
        attachment_id = attachment if isinstance(attachment, str) else str(attachment["id"])
        return self.files[attachment_id].data

    async def serve(self, request: web.Request) -> web.StreamResponse:
        info = request.match_info
        stored = self.files.get(info["attachment_id"])
        if stored is None or (stored.channel_id, stored.filename) != (
            info["channel_id"],
            info["filename"],
        ):
            return web.Response(status=404, text="This content is no longer available.")
        return web.Response(
            body=stored.data, content_type=(stored.content_type or "application/octet-stream")
        )

    def _store(
        self,
        channel_id: str,
        data: bytes,
        filename: str,
        description: str | None,
        ephemeral: bool,
    ) -> Payload:
        attachment_id = str(self._mint())
        # Discord keeps letters, digits, dots and dashes, and makes the rest underscores.
        filename = UNSAFE_IN_FILENAME.sub("_", filename) or "unknown"
        size = image_size(data)
        content_type = sniff_content_type(data) or _guessed_type(filename)
        self.files[attachment_id] = StoredFile(
            channel_id, attachment_id, filename, content_type, data
        )
        url = f"{self.base_url}/attachments/{channel_id}/{attachment_id}/{filename}"
        attachment: Payload = {
            "id": attachment_id,
            "filename": filename,
            "size": len(data),
            "url": url,
            "proxy_url": url,
        }
        if content_type is not None:
            attachment["content_type"] = content_type
        if description:
            attachment["description"] = description
        if size is not None:
            attachment["width"], attachment["height"] = size
        if ephemeral:
            attachment["ephemeral"] = True
        return attachment


def _guessed_type(filename: str) -> str | None:
    guessed, _ = mimetypes.guess_type(filename)
    if guessed is not None and guessed.startswith("text/"):
        return guessed + "; charset=utf-8"
    return guessed
