"""Logging set-up for every gtid-audit command: plain text or one JSON object per line.

Nothing here ever receives a secret: passwords are resolved from their references only inside
the connection code and are never formatted into a message.
"""
from __future__ import annotations

import json
import logging
import sys
import time

__all__ = ["configure_logging", "JsonFormatter", "error_line"]

_STANDARD_ATTRS = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


#: Py4J's first line of an exception from the JVM names the call ("An error occurred while calling
#: o58.sql."), not the failure; the Java exception follows it on the next line, after ": ".
_PY4J_CALL_LINE = "An error occurred while calling "


def error_line(exc: BaseException, limit: int = 300) -> str:
    """The one line a log message or a result row says about ``exc``: its first line of text, and
    for an error from the JVM (Py4J's ``Py4JJavaError``) the Java exception's class and message
    instead of Py4J's line about the call; the exception's type when it has no text, or when its
    text cannot be had (a Py4J error asks the JVM for it, which may be gone)."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a helper for error paths must not raise
        return type(exc).__name__
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(_PY4J_CALL_LINE):
            return line.removeprefix(": ")[:limit]
    return type(exc).__name__


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg, plus any ``extra=`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Send gtid-audit's logs to stderr in ``fmt`` ('text' or 'json'); quiet py4j's chatter."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("py4j", "py4j.clientserver", "py4j.java_gateway", "mysql.connector"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
