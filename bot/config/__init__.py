"""Configuration: ``config.toml`` read into pydantic models, checked, reported and watched.

What lives here: the sections' models (``schema``; the model's own in ``model_settings``, the
tools' in ``tool_settings``, ``/catchup``'s in ``catchup_settings``, the status reaction's in
``status_settings``, threads' in ``thread_settings``), the ``[models.NAME]`` endpoints
(``named_models``), the
``[[channels]]`` tables with the effective settings of each (``channels``) and those where an
exported log's channel was (``export_settings``), the checks they
share (``validators``), the one-line error texts (``errors``), ``check-config``'s printout
(``report``), the file itself read only when it is a regular file of a config's size
(``config_file``), the reload watcher that tells live edits from restart ones (``reload``), the
store URL masking (``store_url``) and what to write instead for a TOML clash tomllib reports
bare (``toml_hints``). A new setting goes into the section model that reads it.

May import: ``bot.errors`` and ``conversation`` (whose own sections live in
``conversation.common.settings``). Nothing here talks to Discord, the model or the store: the layers
above read the settings.
"""

from bot.config.schema import Config, ConfigError, load_config

__all__ = ["Config", "ConfigError", "load_config"]
