"""kassa-client builds on its own with ``python -m build`` (an isolated build, as for
publishing), and the wheel alone is the whole client: typed, its metadata complete."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[3] / "clients" / "python"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("client-source") / "python"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    out = tmp_path_factory.mktemp("client-dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_wheel_carries_the_package_its_types_and_its_metadata(dist):
    (wheel,) = dist.glob("kassa_client-0.1.0-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        metadata = email.message_from_bytes(z.read("kassa_client-0.1.0.dist-info/METADATA"))
    assert {
        "kassa_client/py.typed",
        "kassa_client/client.py",
        "kassa_client/resources/payments.py",
        "kassa_client/models/payments.py",
    } <= names
    assert not any(n.startswith(("tests/", "kassa_common/")) for n in names)
    assert (metadata["Name"], metadata["Version"], metadata["Requires-Python"]) == ("kassa-client", "0.1.0", ">=3.10")
    assert metadata.get_all("Requires-Dist") == ["requests<3,>=2.31"]
    assert "verify_signature" in metadata.get_payload()  # the README is the long description


def test_the_sdist_carries_the_readme_and_the_changelog(dist):
    (sdist,) = dist.glob("kassa_client-0.1.0.tar.gz")
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {"README.md", "CHANGELOG.md", "pyproject.toml", "kassa_client/py.typed"} <= names


def test_the_installed_wheel_alone_is_a_working_client(dist, tmp_path):
    (wheel,) = dist.glob("*.whl")
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        timeout=120,
    )
    # -S: no site-packages, so not the checkout's editable install; requests from this environment
    code = (
        f"import sys; sys.path[:0] = [{str(target)!r}]; sys.path.append({sysconfig.get_paths()['purelib']!r})\n"
        "import kassa_client, pathlib\n"
        "print(kassa_client.__file__)\n"
        'event = kassa_client.construct_event(b\'{"id":"evt_1","event":"webhook.test",\'\n'
        '    b\'"timestamp":"2026-01-01T00:00:00.000Z","test_mode":true,"data":{}}\',\n'
        '    kassa_client.signature_header(\'s\', b\'{"id":"evt_1","event":"webhook.test",\'\n'
        '    b\'"timestamp":"2026-01-01T00:00:00.000Z","test_mode":true,"data":{}}\'), \'s\')\n'
        "print(event.type, kassa_client.Kassa('kassa_test_x').payments.__class__.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    where, what = done.stdout.splitlines()
    assert Path(where).is_relative_to(target) and what == "webhook.test Payments"
