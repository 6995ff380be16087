"""Clustered servers in the settings (DESIGN §7): ``RABBITMQ_URL`` listing several nodes,
``DATABASE_URL`` a libpq multi-host URL, ``DATABASE_READ_URL`` for the dashboard's lists."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from kassa_common.config import Settings
from kassa_common.db import libpq_url, sqlalchemy_url, with_database
from kassa_common.messaging.publisher import Nodes, connection_parameters, node_urls

MULTI = "postgresql://kassa:s%40cret@db1:5432,db2:6432/kassa?target_session_attrs=read-write"
NODES = "amqp://guest:guest@mq1:5672/%2F,amqp://u:p@mq2:5673/kassa, amqp://guest:guest@mq3/%2F"


def test_a_multi_host_url_is_respelled_for_sqlalchemy_with_every_host_and_option():
    url = make_url(sqlalchemy_url(MULTI))
    assert url.drivername == "postgresql+psycopg2"
    assert url.username == "kassa" and url.password == "s@cret"
    assert url.database == "kassa"
    assert url.host is None
    assert url.query == {"host": ("db1:5432", "db2:6432"), "target_session_attrs": "read-write"}


def test_respelling_is_idempotent_and_leaves_one_host_alone():
    once = sqlalchemy_url(MULTI)
    assert sqlalchemy_url(once) == once
    assert sqlalchemy_url("postgresql://postgres@127.0.0.1:5432/kassa") == (
        "postgresql+psycopg2://postgres@127.0.0.1:5432/kassa"
    )
    assert sqlalchemy_url("postgres://u@h/db?sslmode=require") == "postgresql+psycopg2://u@h/db?sslmode=require"


def test_the_libpq_form_is_given_back_to_psycopg2():
    assert libpq_url(MULTI) == MULTI
    assert libpq_url(sqlalchemy_url(MULTI)) == MULTI
    assert libpq_url("postgresql://u@h1,h2/db") == "postgresql://u@h1,h2/db"
    assert libpq_url("postgresql://postgres@127.0.0.1:5432/kassa") == "postgresql://postgres@127.0.0.1:5432/kassa"
    assert libpq_url("postgresql://h1:1,h2:2/kassa") == "postgresql://h1:1,h2:2/kassa"


def test_another_database_on_the_same_hosts():
    assert with_database(MULTI, "postgres") == (
        "postgresql://kassa:s%40cret@db1:5432,db2:6432/postgres?target_session_attrs=read-write"
    )
    assert with_database("postgresql://postgres@127.0.0.1:5432/postgres", "kassa_test_x") == (
        "postgresql://postgres@127.0.0.1:5432/kassa_test_x"
    )


def test_settings_take_a_multi_host_database_and_a_read_url_defaulting_to_it():
    settings = Settings.from_env({"DATABASE_URL": MULTI})
    assert settings.database_url == MULTI
    assert settings.database_read_url is None
    assert settings.read_database_url == MULTI
    replica = "postgresql://kassa@db2:6432,db1:5432/kassa?target_session_attrs=prefer-standby"
    settings = Settings.from_env({"DATABASE_URL": MULTI, "DATABASE_READ_URL": replica})
    assert settings.read_database_url == replica


@pytest.mark.parametrize("name", ["DATABASE_URL", "DATABASE_READ_URL"])
@pytest.mark.parametrize("bad", ["postgresql://u:pw@h1:5432,/kassa", "postgresql://u:pw@h:port/kassa", "nonsense"])
def test_a_malformed_database_url_is_refused_naming_it_not_its_password(name, bad):
    with pytest.raises(ValueError, match=name) as raised:
        Settings.from_env({name: bad})
    assert "pw" not in str(raised.value)


def test_rabbitmq_url_lists_nodes_each_with_its_parameters_in_order():
    assert node_urls(NODES) == [
        "amqp://guest:guest@mq1:5672/%2F",
        "amqp://u:p@mq2:5673/kassa",
        "amqp://guest:guest@mq3/%2F",
    ]
    params = connection_parameters(NODES, "kassa-test")
    assert [(p.host, p.port, p.virtual_host) for p in params] == [
        ("mq1", 5672, "/"),
        ("mq2", 5673, "kassa"),
        ("mq3", 5672, "/"),
    ]
    assert all(p.connection_attempts == 1 and p.heartbeat == 30 for p in params)
    assert all(p.client_properties == {"connection_name": "kassa-test"} for p in params)
    assert Settings.from_env({"RABBITMQ_URL": NODES}).rabbitmq_url == NODES
    assert len(connection_parameters(Settings().rabbitmq_url, "one")) == 1


@pytest.mark.parametrize("bad", ["amqp://a/,", "http://mq1/", "amqp://a/,,amqp://b/", "mq1:5672"])
def test_a_malformed_rabbitmq_url_is_refused(bad):
    with pytest.raises(ValueError, match="RABBITMQ_URL"):
        Settings.from_env({"RABBITMQ_URL": bad})


def test_a_client_tries_the_nodes_from_the_one_after_the_node_it_was_on():
    nodes = Nodes(NODES, "kassa-test")
    assert [p.host for p in nodes.params] == ["mq1", "mq2", "mq3"]
    nodes._index = 1  # what connect() leaves after a connection to mq1
    assert [p.host for p in nodes.params] == ["mq2", "mq3", "mq1"]
