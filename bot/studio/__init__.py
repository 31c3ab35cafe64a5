"""The studio: a local web page to tune ``[context]`` on a log and browse recorded answers.

What lives here: the page's data for one channel (``channel``), which ``[[channels]]`` table
applies to it and its copy as TOML (``applied``), and its HTTP server (``server``); its command is
``bot.cli.studio``.

May import: ``bot.answering``, ``bot.storage``, ``bot.model``, ``bot.config``, ``bot.errors``
and ``conversation`` (whose ``replay`` gives the follow decisions it marks on the timeline).
"""
