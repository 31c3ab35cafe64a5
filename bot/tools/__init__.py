"""Tools the model may call while it answers: the operators' MCP servers (``[[tools.mcp]]``),
the built-in ``read_page`` and an answer's own built-ins (``catch_up``).

What lives here: the tool specs and results every tool speaks in, and an answer's own
built-ins (``spec``), making a result inert before the model reads it (``defuse``), the MCP
connections and their restarts (``mcp_servers``), a stdio server's messages read with a size
limit (``mcp_stdio``), its stderr into the bot's log (``server_stderr``), the HTTP client of a
server reached by url, its secrets kept out of the logs and its reads bounded (``mcp_http``),
``read_page`` on the article reader (``read_page``), the hosts it may read in one answer
(``page_hosts``), the toolbox that runs a round of calls in parallel under the limits
(``toolbox``), and what an answer's calls returned, given back to a prompt rebuilt after
"context too long" instead of running them again (``call_memory``), the images tools return,
checked and kept to be attached to the answer (``tool_images``, with what kind of image some
bytes are in ``image_kind``).
The ``[tools]`` settings are in ``bot.config.tool_settings``.

What it may import: ``bot.errors``, ``bot.config``, ``bot.storage`` (the layers below it),
``conversation/`` (the article reader) and the ``mcp`` SDK. The model client (``bot.model``,
the layer above) imports the specs and asks a toolbox through a small protocol; nothing here
knows the model or Discord.

Tools only read: ``read_page`` reads public pages through the SSRF guard, MCP servers do what
their operator runs them for. A tool that reads Discord must respect who may read a channel's
history (issue 23): the one that does, ``catch_up``, is an answer's own built-in
(``spec.AnswerTool``, bound to the answer's trigger), built where the answer is
(``bot.answering.catchup_tool``), since nothing here knows Discord.
"""
