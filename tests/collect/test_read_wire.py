"""jobs.mysql_connection's cheaper wire handling (issue #21, stop 29): the buffered packet broker, the
column definition cache and the inlined literals give what mysql-connector's own code gives."""
from __future__ import annotations

import socket

import mysql.connector.errors as myerr
import pytest
from mysql.connector.network import NetworkBrokerPlain
from mysql.connector.protocol import MySQLProtocol

from jobs.mysql_connection import _buffered_broker_class, _column_cache_protocol_class, inline_literals


def _packet(payload: bytes, seq: int) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq]) + payload


class _Socket:
    """A socket whose ``recv`` hands out ``chunks`` one per call (then the peer's close, b"")."""

    def __init__(self, *chunks: bytes | BaseException) -> None:
        self.chunks = list(chunks)
        self.calls = 0

    def recv(self, size: int) -> bytes:
        self.calls += 1
        chunk = self.chunks.pop(0) if self.chunks else b""
        if isinstance(chunk, BaseException):
            raise chunk
        assert len(chunk) <= size
        return chunk


class _Stream:
    """A socket for the connector's own broker: ``recv_into`` gives at most what it is asked for."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def recv_into(self, view, size: int) -> int:
        chunk, self.data = self.data[:size], self.data[size:]
        view[:len(chunk)] = chunk
        return len(chunk)


STREAM = b"".join(_packet(p, i) for i, p in enumerate([b"\x0a9.7.4\x00greeting", b"", b"x" * 300, b"\xfe\x00\x00"]))


@pytest.mark.parametrize("cuts", [[len(STREAM)], [1, 2, 3], [4, 7, 200], list(range(1, len(STREAM)))],
                         ids=["one-receive", "header-split", "payload-split", "byte-by-byte"])
def test_buffered_broker_returns_the_connectors_packets(cuts):
    """Packets cut from buffered receives are the connector's packets and sequence numbers,
    however the stream arrives."""
    bounds = [0, *cuts, len(STREAM)]
    chunks = [STREAM[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]
    ours, theirs = _buffered_broker_class()(), NetworkBrokerPlain()
    sock_ours, sock_theirs = _Socket(*chunks), _Stream(STREAM)
    for _ in range(4):
        assert ours.recv(sock_ours, "db:3306") == theirs.recv(sock_theirs, "db:3306")
        assert ours._pktnr == theirs._pktnr


def test_buffered_broker_needs_one_receive_for_many_packets():
    """A result set that arrives in one segment costs one socket call, not two per packet."""
    broker, sock = _buffered_broker_class()(), _Socket(STREAM)
    for _ in range(4):
        broker.recv(sock, "db:3306")
    assert sock.calls == 1


@pytest.mark.parametrize("failure, error, errno", [
    (socket.timeout("timed out"), myerr.ReadTimeoutError, 3024),
    (ConnectionResetError(104, "reset"), myerr.OperationalError, 2055),
    (b"", myerr.InterfaceError, 2013),
], ids=["timeout", "reset", "closed"])
def test_buffered_broker_raises_the_connectors_errors(failure, error, errno):
    """A timeout, a reset and a closed socket raise what the connector's own broker raises."""
    with pytest.raises(error) as info:
        _buffered_broker_class()().recv(_Socket(STREAM[:6], failure), "db:3306")
    assert info.value.errno == errno


def test_buffered_broker_refuses_plain_text_bytes_left_at_the_switch_to_tls():
    """Bytes received before the socket changed (the TLS switch) are never served as the new
    socket's: the read fails."""
    broker = _buffered_broker_class()()
    broker.recv(_Socket(STREAM[:20] + _packet(b"injected", 1)), "db:3306")
    with pytest.raises(myerr.InterfaceError) as info:
        broker.recv(_Socket(STREAM), "db:3306")
    assert info.value.errno == 2055 and "before the switch to TLS" in str(info.value)


def test_column_cache_gives_the_connectors_description():
    """A column definition parsed from the cache is the connector's, per character set."""
    lc = lambda b: bytes([len(b)]) + b  # noqa: E731
    payload = (lc(b"def") + lc(b"performance_schema") + lc(b"t") + lc(b"t") + lc(b"SERVICE_STATE")
               + lc(b"SERVICE_STATE") + b"\x0c" + (255).to_bytes(2, "little") + (40).to_bytes(4, "little")
               + bytes([254]) + (1).to_bytes(2, "little") + b"\x00\x00\x00")
    packet = bytearray(_packet(payload, 2))
    cached = _column_cache_protocol_class()()
    for encoding in ("utf-8", "latin-1", "utf-8"):
        assert cached.parse_column(packet, encoding) == MySQLProtocol.parse_column(packet, encoding)


@pytest.mark.parametrize("sql, params, expected", [
    ("SHOW BINLOG EVENTS IN %s LIMIT 2", ["binlog.000002"], "SHOW BINLOG EVENTS IN 'binlog.000002' LIMIT 2"),
    ("SHOW RELAYLOG EVENTS IN %s LIMIT 1 FOR CHANNEL %s", ["relay-bin.000003", ""],
     "SHOW RELAYLOG EVENTS IN 'relay-bin.000003' LIMIT 1 FOR CHANNEL ''"),
    ("SHOW BINLOG EVENTS IN %s LIMIT 2", ["it's"], None),
    ("SHOW BINLOG EVENTS IN %s LIMIT 2", ["back\\slash"], None),
    ("SHOW BINLOG EVENTS IN %s LIMIT 2", ["bïnlog.000001"], None),
    ("SHOW BINLOG EVENTS IN %s LIMIT 2", [7], None),
    ("SHOW BINLOG EVENTS IN %s LIMIT 2", ["a", "b"], None),
], ids=["binlog", "relay-default-channel", "quote", "backslash", "non-ascii", "not-a-string", "count"])
def test_inlined_literals_are_the_connectors_text_or_left_to_it(sql, params, expected):
    """A plain name is inlined as the connector would quote it; anything it must escape is left to it."""
    assert inline_literals(sql, params) == expected


def test_without_the_connector_internals_the_connectors_own_classes_are_kept(monkeypatch):
    """Another connector version without the internals these classes extend: they are not used
    (None), and a connection keeps the connector's own broker and parser instead of failing."""
    import mysql.connector.network as network

    monkeypatch.delattr(network, "_strioerror")
    monkeypatch.delattr(MySQLProtocol, "parse_column")
    assert _buffered_broker_class.__wrapped__() is None
    assert _column_cache_protocol_class.__wrapped__() is None
