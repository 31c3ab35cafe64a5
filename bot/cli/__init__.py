"""The command line, ``python -m bot``: argument parsing and one module per command family.

What lives here: the parser and the dispatch with its exit codes (``main``), ``replay``
(``replay``), ``follow`` (``follow``), the store's commands ``export``, ``explain`` and
``forget-user`` (``store``), ``studio`` (``studio``), ``demo`` (``demo``), check-config's lines
about tools (``tools_report``) and its ``--probe`` of the model endpoints (``probe``). A new
command gets its own module here and a line in ``main``.

May import every other layer; nothing imports it but ``bot.__main__``.
"""
