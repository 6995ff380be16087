"""The tests' webhook receiver: the development package's (kassa_dev.receiver), which the
benchmarks and the chaos harness use too. The fixture ``receiver`` is one, closed after the
test::

    from tests.support.receiver import receiver  # noqa: F401  (fixture)
"""

import pytest

from kassa_dev.receiver import Hit, Receiver, Server

__all__ = ["Hit", "Receiver", "Server", "receiver"]


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()
