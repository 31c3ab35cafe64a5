"""The errors an operator or a caller can act on, in one leaf module that imports nothing of ours.

Every command and the bot raise these, and ``bot.cli.main`` turns each into one line on stderr
(exit code 2) instead of a traceback. Being a leaf, this module can be imported at the top of any
module without drawing an import circle (the CLI imports the commands, the commands raise these).

The exception tree, with where the others live::

    Exception
    ├── CommandError          an operator mistake on the command line (a missing file, a bad date)
    ├── StoreError            a storage problem (unknown id, newer schema, duplicate record)
    ├── ConfigError           bot.config.schema: what is wrong in config.toml, one line per problem
    ├── ModelError            bot.model.errors: a model call failed (user_message, retryable)
    └── ValueError
        ├── ExportError       conversation.replay.dce: a channel log that cannot be read
        └── WeightsError      conversation.selection.weights: a weights file that cannot be used
"""

from __future__ import annotations


class CommandError(Exception):
    """A problem the operator can fix, shown as one line."""


class StoreError(Exception):
    """A storage problem stated in one line (unknown id, newer schema, duplicate record...)."""
