"""``python -m kassa_webhook_sender webhooks|email``: run one channel's process."""

from __future__ import annotations

import sys

CHANNELS = ("webhooks", "email")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in CHANNELS:
        sys.exit(f"usage: python -m kassa_webhook_sender {{{'|'.join(CHANNELS)}}}")
    if args[0] == "webhooks":
        from kassa_webhook_sender.webhooks.main import main as run
    else:
        from kassa_webhook_sender.email.main import main as run
    run()


if __name__ == "__main__":
    main()
