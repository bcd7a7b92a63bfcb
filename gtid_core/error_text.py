"""Replication error texts without the audited servers' data (issue 23: no row data at rest).

The channel's ``Last_SQL_Error`` / ``Last_IO_Error`` and performance_schema's receiver error
quote what failed. An applier error can carry row values (``Duplicate entry 'x' for key 't.k'``,
``Incorrect integer value: 'x' for column 'c'``) or a whole statement (``... on query. Default
database: 'w'. Query: 'INSERT ...'``). :func:`redacted_error` is what the collector stores.
"""
from __future__ import annotations

import re

__all__ = ["REDACTED", "redacted_error"]

REDACTED = "<redacted>"

# A statement quoted by the applier (ER_ERROR_ON_QUERY-style "... Query: '%s'") runs to the end
# of the message: everything after "Query: '" goes, nested quotes included.
_QUERY = re.compile(r"(\bQuery: ')(.*)\Z", re.DOTALL)

# Where a server message quotes a value, named by the words before it (errmsg templates):
#   1062 / 1586 ER_DUP_ENTRY*           "Duplicate entry '%s' for key '%s'"
#   1292 ER_TRUNCATED_WRONG_VALUE       "Truncated incorrect %s value: '%s'"
#   1366 ER_TRUNCATED_WRONG_VALUE_FOR_FIELD "Incorrect %s value: '%s' for column '%s' at row %ld"
#   1525 ER_WRONG_VALUE                 "Incorrect %s value: '%s'"
#   ER_FOREIGN_DUPLICATE_KEY_WITH_CHILD_INFO "..., record '%s' would lead to a duplicate entry ..."
# A value ends at the quote followed by what the template puts after it (or by the end of an
# enclosing quoted message: "Error '...' on query", ", Error_code:", the end of the text).
_VALUE_END = r"(?=' for (?:key|column) '|' would lead |'' on query\.|', Error_code|'[.']?\s*\Z)"
_VALUES = re.compile(
    r"((?:\bDuplicate entry|\bvalue:|, record) ')(.*?)" + _VALUE_END, re.DOTALL)
# 1526 ER_NO_PARTITION_FOR_GIVEN_VALUE "Table has no partition for value %s" (unquoted).
_PARTITION_VALUE = re.compile(r"(\bhas no partition for value )(\S+?)(?=[,;']|\.?\s|\.?\Z)")


def redacted_error(message: str | None) -> str | None:
    """``message`` with quoted row values and statement text replaced by :data:`REDACTED`.

    Kept: the error's words and codes, schema, table, column and key names, file names and
    positions, hosts and users, GTIDs and GTID sets (the 13114 purged-binary-logs message keeps
    both sets). Replaced: the value of the value-quoting messages listed above and everything
    after ``Query: '``. A value quoted by a message not listed here is kept: the list follows
    the server's templates, it does not guess. None and "" come back unchanged."""
    if not message:
        return message
    text = _QUERY.sub(lambda m: f"{m.group(1)}{REDACTED}'", message)
    text = _VALUES.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
    return _PARTITION_VALUE.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
