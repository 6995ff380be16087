"""Vendor the API reference's renderer: ``python -m kassa_dev.docs_assets [--check]``.

The page at /v1/api/docs renders the OpenAPI 3.1 document with Swagger UI 5 (the first
major version that reads 3.1). Its files come from the pinned npm package
``swagger-ui-dist`` (package.json) and are committed under
``kassa_api/static/docs/swagger-ui/``, so the web serves them itself (no CDN) and a
production install needs no Node. This copies them from ``node_modules``; ``--check``
only compares (a test does the same), so the committed files are the pinned version's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kassa_dev.chain.paths import find_repo_root

FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "NOTICE", "swagger-ui-bundle.js.LICENSE.txt")
TARGET = Path("services/api/kassa_api/static/docs/swagger-ui")


def _strip_source_map(name: str, data: bytes) -> bytes:
    """The bundles name a source map that is not shipped: leave the reference out."""
    if name.endswith((".js", ".css")):
        lines = data.rstrip(b"\n").split(b"\n")
        if lines and b"sourceMappingURL=" in lines[-1]:
            data = b"\n".join(lines[:-1]) + b"\n"
    return data


def wanted(root: Path) -> dict[str, bytes]:
    source = root / "node_modules" / "swagger-ui-dist"
    if not source.is_dir():
        raise SystemExit("node_modules/swagger-ui-dist is missing: run make deps")
    return {name: _strip_source_map(name, (source / name).read_bytes()) for name in FILES}


def differences(root: Path) -> list[str]:
    return [
        name
        for name, data in wanted(root).items()
        if not (root / TARGET / name).is_file() or (root / TARGET / name).read_bytes() != data
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when they differ")
    args = parser.parse_args(argv)
    root = find_repo_root()
    if args.check:
        stale = differences(root)
        if stale:
            print(f"{TARGET} differs from node_modules/swagger-ui-dist: {', '.join(stale)}", file=sys.stderr)
            return 1
        return 0
    (root / TARGET).mkdir(parents=True, exist_ok=True)
    for name, data in wanted(root).items():
        (root / TARGET / name).write_bytes(data)
    print(f"wrote {len(FILES)} files to {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
