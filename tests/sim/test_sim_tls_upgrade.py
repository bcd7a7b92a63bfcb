"""The simulator's TLS upgrade when the client's ClientHello arrives in two parts, one of them
already read with the SSL request and the other still in the socket as the upgrade starts.

A client that reuses its ``SSLContext`` sends the hello right behind its SSL request, so part of it
can sit in asyncio's ``StreamReader`` when the server starts TLS and part of it can come a moment
later. Both parts must reach the TLS layer, in order; a lost part leaves both sides waiting for a
handshake that never ends (the failure seen once in CI at 0acdfec, on a loaded machine).

The order is made deterministic: the tail of the hello is in the server's socket before the
upgrade's first step runs, so the event loop's next poll hands it to whatever protocol is reading
the socket right after that step.
"""
from __future__ import annotations

import asyncio
import select
import socket
import ssl

from mysql_mimic.stream import MysqlStream

from jobs.sandbox.sim.server import _HandshakeStream, _tls_context
from tests.fixtures.certs import make_ca, make_cert

#: A protocol::SSLRequest packet: 4-byte header (length 32, sequence 1) and a 32-byte body.
SSL_REQUEST = b"\x20\x00\x00\x01" + bytes(32)


def _finish_client_handshake(sock: socket.socket, tls: ssl.SSLObject, incoming: ssl.MemoryBIO,
                             outgoing: ssl.MemoryBIO) -> str:
    """Drive the client's side of the handshake over ``sock`` (blocking, 10 s per read)."""
    sock.settimeout(10)
    while True:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection during the TLS handshake")
        incoming.write(data)
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            sock.sendall(outgoing.read())
            continue
        sock.sendall(outgoing.read())
        return tls.version()


def test_a_client_hello_split_around_the_upgrade_reaches_the_tls_layer_whole(tmp_path):
    """Half the hello is in the reader's buffer and half in the socket when the upgrade starts:
    the server's TLS layer gets both, in order, and both sides finish the handshake on one
    version (before the fix the tail went to the old stream and the client's read timed out)."""
    ca = make_ca(tmp_path, "split-ca")
    cert = make_cert(ca, tmp_path, "split-server", dns=("localhost",))

    async def scenario() -> tuple[str, str]:
        server_sock, client_sock = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=server_sock)
        client_context = ssl.create_default_context(cafile=str(ca.cert))
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = client_context.wrap_bio(incoming, outgoing, server_hostname="localhost")
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        hello = outgoing.read()
        half = len(hello) // 2

        client_sock.sendall(SSL_REQUEST + hello[:half])
        assert await reader.readexactly(len(SSL_REQUEST)) == SSL_REQUEST
        for _ in range(1000):  # bounded: the head of the hello is in the reader's buffer
            if len(reader._buffer) >= half:
                break
            await asyncio.sleep(0.005)
        assert len(reader._buffer) == half

        client_sock.sendall(hello[half:])
        readable, _, _ = select.select([server_sock], [], [], 5)
        assert readable, "the tail of the hello did not reach the server's socket"
        # No await between here and the upgrade's first step: the loop has not read the tail.
        upgrade = asyncio.ensure_future(_HandshakeStream(MysqlStream(reader, writer)).start_tls(
            _tls_context(cert.cert, cert.key)))
        client = asyncio.ensure_future(asyncio.to_thread(_finish_client_handshake, client_sock, tls,
                                                         incoming, outgoing))
        try:
            client_version = await asyncio.wait_for(client, 15)
            await asyncio.wait_for(upgrade, 15)
            server_version = writer.transport.get_extra_info("ssl_object").version()
        finally:
            writer.close()
            client_sock.close()
        return client_version, server_version

    client_version, server_version = asyncio.run(scenario())
    assert client_version == server_version and client_version.startswith("TLSv1.")
