"""``db.Prepared``: the PREPARE and EXECUTE texts a statement becomes."""

from __future__ import annotations

import pytest

from kassa_common.db import Prepared


def test_parameters_are_numbered_in_the_order_of_their_types_wherever_they_occur():
    statement = Prepared("kassa_t", "SELECT %(b)s, %(a)s WHERE %(b)s IS NOT NULL", {"a": "integer", "b": "text"})
    assert statement.prepare == "PREPARE kassa_t (integer, text) AS SELECT $2, $1 WHERE $2 IS NOT NULL"
    assert statement.execute == "EXECUTE kassa_t (%(a)s, %(b)s)"


def test_a_parameter_without_a_type_is_refused_when_the_statement_is_declared():
    with pytest.raises(ValueError, match="no type"):
        Prepared("kassa_t", "SELECT %(a)s, %(c)s", {"a": "integer"})
