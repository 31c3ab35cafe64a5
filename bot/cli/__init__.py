"""The command line, ``python -m bot``: argument parsing and one module per command family.

What lives here: the parser and the dispatch with its exit codes (``main``), ``replay``
(``replay``), the store's commands ``export``, ``explain`` and ``forget-user`` (``store``) and
``studio`` (``studio``). A new command gets its own module here and a line in ``main``.

May import every other layer; nothing imports it but ``bot.__main__``.
"""
