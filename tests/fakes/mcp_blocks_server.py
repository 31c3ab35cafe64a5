"""A stdio MCP server written by hand (no SDK), for what the SDK would not send: its one tool,
``blocks``, answers with ``count`` empty text content blocks on one line (80,000 fit in 2 MB).

It speaks just enough of the protocol for the bot's client: ``initialize``, ``ping``,
``tools/list`` and ``tools/call``; notifications are read and ignored. Run it as
``python tests/fakes/mcp_blocks_server.py``.
"""

from __future__ import annotations

import json
import sys

TOOL = {
    "name": "blocks",
    "description": "Answers with COUNT empty text blocks.",
    "inputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}},
}


def result(request: dict) -> dict:
    method = request["method"]
    if method == "initialize":
        return {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "blocks", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        count = int(request["params"].get("arguments", {}).get("count", 1))
        return {"content": [{"type": "text", "text": ""}] * count, "isError": False}
    return {}  # ping


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": result(request)}
        sys.stdout.write(json.dumps(answer, separators=(",", ":")) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
