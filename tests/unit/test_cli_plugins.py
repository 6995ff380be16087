"""``kassa`` finds its plugin commands through the ``kassa.cli`` entry-point group, so the
product's CLI offers ``kassa dev ...`` without importing the development tooling."""

from __future__ import annotations

from importlib.metadata import entry_points

from kassa_common import cli


class BrokenEntryPoint:
    name, value = "broken", "kassa_missing.cli:add_parser"

    def load(self):
        raise ImportError("No module named 'kassa_missing'")


def test_the_development_tooling_registers_kassa_dev():
    registered = {ep.name: ep.value for ep in entry_points(group=cli.PLUGIN_GROUP)}
    assert registered.get("dev") == "kassa_dev.cli:add_parser"


def test_kassa_dev_pay_parses_through_the_plugin():
    args = cli.build_parser().parse_args(["--json", "dev", "pay", "24GEX6CVPN", "--amount", "4.5"])
    assert (args.group, args.cmd, args.short_id, str(args.amount)) == ("dev", "pay", "24GEX6CVPN", "4.5")
    assert args.run.__module__ == "kassa_dev.cli"


def test_a_plugin_that_fails_to_load_leaves_the_operator_commands_working(monkeypatch, capsys):
    monkeypatch.setattr(cli, "entry_points", lambda group: [BrokenEntryPoint()])
    args = cli.build_parser().parse_args(["db", "upgrade"])
    assert args.run is cli.cmd_db_upgrade
    assert "ignoring the 'broken' commands" in capsys.readouterr().err
