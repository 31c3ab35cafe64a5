"""The HTTP client of an MCP server reached by url: its secrets out of sight, its reads bounded.

A url may carry secrets (``https://user:password@host/mcp?key=...``), and the HTTP client logs
every request's url at INFO, the SDK logs the endpoint at DEBUG, and errors quote it. So the
SDK and the client are only given the ``public`` url (scheme, host, port and path); the
transport below puts the query back and sends the user and password as Basic auth when a
request leaves for that endpoint, under the logging. What was not logged cannot leak.

The SDK reads a JSON answer whole, however long: an endless body would grow the bot until it
is killed. Each answer is cut at ``max_bytes`` (``mcp_servers.response_limit``; to a POST,
the SDK turns the error into a refused call, the connection goes on; the DELETE that ends a
session and the redirect of a GET, which the SDK also reads whole, fail the same way); a
compressed answer, whose size says nothing of what it unpacks to, is refused the same way (none
is asked for). The one answer not cut whole is a GET's plain event stream, which lasts as
long as the connection: the SDK holds each of its events to ``max_bytes``
(``max_sse_event_size``).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx2


class ResponseRefused(httpx2.StreamError):
    """An answer over the byte limit, or compressed: the SDK reports it as the call's error."""


@dataclass(frozen=True)
class Endpoint:
    public: str  # what the SDK and httpx2 see (and log): no user, no password, no query
    real: str  # what is sent: with the query
    authorization: str | None  # Basic auth from the url's user and password

    @classmethod
    def of(cls, url: str) -> Endpoint:
        parts = urlsplit(url)
        userinfo, at, host = parts.netloc.rpartition("@")
        authorization = None
        if at:
            user, _, password = userinfo.partition(":")
            pair = f"{unquote(user)}:{unquote(password)}".encode()
            authorization = "Basic " + base64.b64encode(pair).decode("ascii")
        public = urlunsplit((parts.scheme, host, parts.path, "", ""))
        return cls(public, urlunsplit((parts.scheme, host, parts.path, parts.query, "")),
                   authorization)  # fmt: skip


class BoundedStream(httpx2.AsyncByteStream):
    """The answer's bytes until ``max_bytes``, then :class:`ResponseRefused`."""

    def __init__(self, stream: httpx2.AsyncByteStream, max_bytes: int, refusal: str = "") -> None:
        self._stream, self._max, self._refusal = stream, max_bytes, refusal

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._refusal:
            raise ResponseRefused(self._refusal)
        read = 0
        async for chunk in self._stream:
            read += len(chunk)
            if read > self._max:
                raise ResponseRefused(f"the server's answer is over {self._max} bytes: not read")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class EndpointTransport(httpx2.AsyncBaseTransport):
    """Sends a request for the public url to the real one, with the url's credentials, and
    bounds what each answer but a GET's event stream reads back."""

    def __init__(
        self, endpoint: Endpoint, max_bytes: int, inner: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        self._endpoint, self._max = endpoint, max_bytes
        self._public = httpx2.URL(endpoint.public)
        self._inner = inner if inner is not None else httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if (url.scheme, url.host, url.port) == (self._public.scheme, self._public.host,
                                                self._public.port):  # fmt: skip
            headers = request.headers.copy()
            if self._endpoint.authorization and "authorization" not in headers:
                headers["Authorization"] = self._endpoint.authorization
            target = self._endpoint.real if url == self._public else url
            request = httpx2.Request(
                request.method,
                target,
                headers=headers,
                stream=request.stream,
                extensions=request.extensions,
            )
        response = await self._inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        refusal = "" if encoding == "identity" else "the server compressed its answer: not read"
        if refusal or request.method != "GET" or not _event_stream(response):
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = BoundedStream(response.stream, self._max, refusal)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _event_stream(response: httpx2.Response) -> bool:
    content_type = response.headers.get("content-type", "").partition(";")[0]
    return response.status_code == 200 and content_type.strip().lower() == "text/event-stream"


def http_client(
    url: str, headers: dict[str, str], max_bytes: int
) -> tuple[httpx2.AsyncClient, str]:
    """The client for an MCP server at ``url`` and the url to give the SDK."""
    endpoint = Endpoint.of(url)
    client = httpx2.AsyncClient(
        headers={**headers, "Accept-Encoding": "identity"},
        timeout=httpx2.Timeout(30.0, read=300.0),
        transport=EndpointTransport(endpoint, max_bytes),
    )
    return client, endpoint.public
