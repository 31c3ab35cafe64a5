"""Tools the model may call while it answers: the operators' MCP servers (``[[tools.mcp]]``)
and the built-in ``read_page``.

What lives here: the ``[tools]`` settings (``settings``), the tool specs and results every tool
speaks in (``spec``), making a result inert before the model reads it (``defuse``), the MCP
connections and their restarts (``mcp_servers``), ``read_page`` on the article reader
(``read_page``) and the toolbox that runs a round of calls in parallel under the limits
(``toolbox``).

What it may import: ``conversation/`` (the article reader, text cleaning), pydantic and the
``mcp`` SDK. Never ``bot.model`` (the model client asks a toolbox through a small protocol, so
neither knows the other), nor the Discord side (``bot.app``, answering, posting).

Tools only read: ``read_page`` reads public pages through the SSRF guard, MCP servers do what
their operator runs them for. A tool that reads Discord would have to respect who may read a
channel's history (issue 23); none does yet.
"""
