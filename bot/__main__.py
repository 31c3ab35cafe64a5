"""``python -m bot``: see ``bot.cli``."""

from bot.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
