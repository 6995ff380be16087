"""The Procfile reader that `make run`, the test stack and the compose check share."""

from __future__ import annotations

import pytest

from kassa_dev import procfile


def test_procfile_lines_read_as_name_and_command(tmp_path):
    path = tmp_path / "Procfile"
    path.write_text("# the stack\n\nweb: gunicorn -c conf.py app:app\nrelay:python -m pkg.relay --flag 'a b'\n")
    assert [(p.name, p.argv) for p in procfile.read(path)] == [
        ("web", ["gunicorn", "-c", "conf.py", "app:app"]),
        ("relay", ["python", "-m", "pkg.relay", "--flag", "a b"]),
    ]
    path.write_text("web gunicorn\n")
    with pytest.raises(ValueError, match="expected 'name: command'"):
        procfile.read(path)
