"""The one error hierarchy of gtid_core.

Every exception says when it is raised and quotes the offending input (``{text!r}``), so that a
bad value from one server can be recorded as a finding instead of crashing a fleet run.
"""

__all__ = ["GtidCoreError", "GtidParseError", "SnapshotError", "VersionParseError"]


class GtidCoreError(Exception):
    """Base class of every error raised by gtid_core."""


class GtidParseError(GtidCoreError, ValueError):
    """Raised by ``GtidSet.parse`` for text the MySQL server would reject as a GTID set
    (``ER_MALFORMED_GTID_SET_SPECIFICATION``, error 1772). The message quotes the text and the
    offset where parsing stopped."""


class SnapshotError(GtidCoreError, ValueError):
    """Raised when the rows a server returned cannot be turned into a typed snapshot (a missing
    required column, a value of the wrong shape). The message names the column and quotes the
    value."""


class VersionParseError(GtidCoreError, ValueError):
    """Raised for a ``@@version`` string that does not start with ``major.minor.patch``."""
