"""A libpq multi-host ``DATABASE_URL`` (DESIGN §7): with its first host down (a closed
port, as the old primary after a failover), the web connects to the next one and answers
as usual; the dashboard's lists read through ``DATABASE_READ_URL`` the same way."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from kassa_common.accounts import keys
from kassa_common.db import make_engine, unit_of_work
from kassa_api.app import create_app
from kassa_dev.instances import free_port
from tests.support.api import PAYMENT
from tests.support.dashboard import signed_in


def behind_a_dead_host(database_url: str, attrs: str = "read-write") -> str:
    """``database_url`` as the second host of a multi-host URL whose first host is down."""
    url = make_url(database_url)
    return (
        f"postgresql://{url.username}@127.0.0.1:{free_port()},{url.host}:{url.port}/{url.database}"
        f"?target_session_attrs={attrs}"
    )


def test_the_api_works_when_the_first_host_is_down(settings, merchant):
    multi = behind_a_dead_host(settings.database_url)
    app = create_app(settings.with_(database_url=multi))
    client = app.test_client()
    assert client.get("/readyz").status_code == 200
    created = client.post("/v1/api/payments", json=PAYMENT, headers=merchant.headers())
    assert created.status_code == 201, created.get_data(as_text=True)
    payment = created.get_json()["data"]
    got = client.get(f"/v1/api/payments/{payment['id']}", headers=merchant.headers())
    assert got.status_code == 200
    assert got.get_json()["data"]["status"] == "PENDING"


def test_the_dashboard_list_and_export_read_from_the_read_url(settings, engine, sessions):
    read_url = behind_a_dead_host(settings.database_url, "prefer-standby")
    app = create_app(settings.with_(database_read_url=read_url), engine=engine)
    dash = signed_in(app.test_client(), sessions, mode="test")
    with engine.connect() as conn:
        merchant_id = conn.scalar(sa.text("SELECT id FROM merchants WHERE email = :e"), {"e": dash.email})
    with unit_of_work(sessions) as s:
        key = keys.create_key(s, merchant_id, "test", list(keys.SCOPES)).key
    created = app.test_client().post("/v1/api/payments", json=PAYMENT, headers={"X-Api-Key": key})
    assert created.status_code == 201
    short_id = created.get_json()["data"]["short_id"]

    listed = dash.get("/dashboard/payments")
    assert listed.status_code == 200
    assert short_id in listed.get_data(as_text=True)
    exported = dash.get("/dashboard/payments/export.csv")
    assert exported.status_code == 200
    assert created.get_json()["data"]["id"] in exported.get_data(as_text=True)
    assert dash.get("/dashboard/overview").status_code == 200

    # the reads went to the read URL's pool (its own application name), not the main one
    probe = make_engine(settings.database_url, pool_size=1)
    try:
        with probe.connect() as conn:
            readers = conn.scalar(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE application_name = 'kassa-api-read' AND datname = current_database()"
                )
            )
    finally:
        probe.dispose()
    assert readers >= 1
