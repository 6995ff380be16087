"""``python -m kassa_webhook_sender webhooks|email``: run one channel's process."""

from __future__ import annotations

import importlib
import sys

CHANNELS = ("webhooks", "email")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in CHANNELS:
        sys.exit(f"usage: python -m kassa_webhook_sender {{{'|'.join(CHANNELS)}}}")
    importlib.import_module(f"kassa_webhook_sender.{args[0]}.main").main()


if __name__ == "__main__":
    main()
