"""``python -m bot``: see ``bot.cli.main``."""

from bot.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
