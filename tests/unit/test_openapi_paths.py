"""The OpenAPI document names a path's parameters in the order the path has them, in every
process (Flask keeps a rule's arguments as a set, whose order changes with the hash seed, so
two workers of one server could otherwise publish two documents)."""

from __future__ import annotations

import pytest
from flask import Flask

from kassa_api import openapi
from kassa_api.endpoint import endpoint

pytestmark = pytest.mark.unit

NAMES = ["ref", "delivery_id", "attempt", "zone", "b", "a"]  # one order in 720 by chance


def test_path_parameters_are_listed_in_the_order_of_the_path():
    app = Flask(__name__)

    @app.get("/v1/api/probe/" + "/".join(f"<{n}>" for n in NAMES))
    @endpoint("A probe", scope=None, tag="probe", envelope_kind="bare")
    def probe(**_):
        return {}

    document = openapi.build(app, "http://127.0.0.1:8000/v1/api")
    (operation,) = document["paths"]["/probe/" + "/".join(f"{{{n}}}" for n in NAMES)].values()
    assert [p["name"] for p in operation["parameters"] if p["in"] == "path"] == NAMES
