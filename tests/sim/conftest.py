"""Fixtures shared by the simulator's tests."""
from __future__ import annotations

import pytest


@pytest.fixture
def statements(monkeypatch):
    """The statements every :class:`jobs.collector.ServerReader` sends while the test runs, in order
    (the list can be cleared between reads)."""
    from jobs.collector import ServerReader

    sent: list[str] = []
    query = ServerReader.query

    def counting(self, sql, *args, **kwargs):
        sent.append(sql)
        return query(self, sql, *args, **kwargs)

    monkeypatch.setattr(ServerReader, "query", counting)
    return sent
