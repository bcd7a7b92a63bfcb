"""A loopback TCP proxy that can hold the source→replica stream after a byte budget.

Used to cut a replica's receiver in the middle of a transaction without debug builds: the
replica connects through the proxy; ``hold_after(n)`` lets ``n`` more bytes of the source's
stream through and then stops forwarding (the connection stays open), so the receiver has
written the first events of a large transaction to its relay log and waits for the rest. A
``STOP REPLICA IO_THREAD`` then leaves the relay log ending inside the transaction.
"""
from __future__ import annotations

import contextlib
import selectors
import socket
import threading

__all__ = ["HoldingProxy"]

HOST = "127.0.0.1"


class HoldingProxy:
    """Forward 127.0.0.1:``port`` to ``target_port``; downstream bytes can be held."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((HOST, 0))
        self._listener.listen(8)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._budget: int | None = None       # None: unlimited downstream bytes
        self.held = threading.Event()          # set once forwarding stopped on the budget
        self._closing = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        accept = threading.Thread(target=self._accept_loop, name=f"proxy-{self.port}", daemon=True)
        accept.start()
        self._threads.append(accept)

    def hold_after(self, nbytes: int) -> None:
        """Forward at most ``nbytes`` more bytes from the source, then hold the stream."""
        with self._lock:
            self._budget = nbytes
            self.held.clear()

    def release(self) -> None:
        with self._lock:
            self._budget = None
            self.held.clear()

    def _take(self, wanted: int) -> int:
        with self._lock:
            if self._budget is None:
                return wanted
            allowed = min(wanted, self._budget)
            self._budget -= allowed
            if self._budget == 0:
                self.held.set()
            return allowed

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection((HOST, self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            self._sockets += [client, upstream]
            pump = threading.Thread(target=self._pump, args=(client, upstream), daemon=True)
            pump.start()
            self._threads.append(pump)

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        sel = selectors.DefaultSelector()
        sel.register(client, selectors.EVENT_READ)
        sel.register(upstream, selectors.EVENT_READ)
        pending = b""                       # source bytes read but not yet allowed through
        try:
            while not self._closing.is_set():
                for key, _ in sel.select(timeout=0.1):
                    if key.fileobj is client:
                        data = client.recv(65536)
                        if not data:
                            return
                        upstream.sendall(data)
                    elif not pending:
                        pending = upstream.recv(65536)
                        if not pending:
                            return
                if pending:
                    allowed = self._take(len(pending))
                    if allowed:
                        client.sendall(pending[:allowed])
                        pending = pending[allowed:]
                    if pending:
                        # Held: stop reading from the source until released.
                        with contextlib.suppress(KeyError, ValueError):
                            sel.unregister(upstream)
                    else:
                        with contextlib.suppress(KeyError, ValueError):
                            sel.register(upstream, selectors.EVENT_READ)
        except OSError:
            return
        finally:
            sel.close()
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.close()

    def close(self) -> None:
        """Stop accepting, close every connection, join the threads."""
        self._closing.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        for thread in self._threads:
            thread.join(timeout=2)

    def __enter__(self) -> "HoldingProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
