"""Schemathesis hooks of ``make fuzz`` (loaded by the CLI through SCHEMATHESIS_HOOKS): half
of the generated path ids are swapped for real ones (KASSA_FUZZ_IDS, JSON: the id of each
resource), so the operations also run on objects that exist, not only on 404s."""

from __future__ import annotations

import json
import os
import zlib

import schemathesis

IDS: dict[str, str] = json.loads(os.environ.get("KASSA_FUZZ_IDS", "{}"))


@schemathesis.hook
def map_path_parameters(context, path_parameters):
    if not path_parameters:
        return path_parameters
    operation = getattr(context, "operation", None)
    resource = operation.path.split("/")[1] if operation is not None else ""
    for name, value in list(path_parameters.items()):
        if not isinstance(value, str) or zlib.crc32(value.encode()) % 2:
            continue  # the other half keeps the generated value
        real = IDS.get(name) or (IDS.get(resource) if name == "ref" else None)
        if real:
            path_parameters[name] = real
    return path_parameters
