"""The audit's checks: pure functions from typed snapshots to :class:`Finding` records.

Two entry points, called by the audit job once per server and once per replication channel::

    run_server_checks(server, previous, replication) -> list[Finding]
    run_pair_checks(replica, channel, source, relay_tail, fleet) -> list[Finding]

One family of checks per module, each built on ``catalogue`` and, for a pair check, ``pair``:

- ``catalogue``: ``CHECKS``, the registry (``gtid-audit explain CHECK_ID``), one :class:`CheckInfo`
  per check id, and the helpers every check makes its findings with.
- ``pair``: the pair model, everything a pair check reads resolved once: the replica, its
  channel, its source, the read order and what it means for soundness, the one reconnect
  simulation.
- ``on_reconnect``: what the source will do on the replica's next connect
  (replica_has_more_gtids, source_purged_required_gtids, silent_purged_gap,
  replica_near_purge_horizon).
- ``divergence``: the replica's GTID sets against its source's (errant_transactions,
  replica_gtid_holes, replica_gtid_history_lost).
- ``relay_tail``: the newest relay log's last transaction (incomplete_relay_log_tail).
- ``channel``: the channel's threads and settings (replication_*, config_* of a channel).
- ``server``: one server's settings (with its channels and the ring it may close) and how it
  changed since the previous night.
- ``runners``: the two entry points.

Every check function's docstring says what it proves, what it cannot see, and the server
behaviour it mirrors; docs/checks.md is the long form. The names below are what the rest of the
code uses; everything else is the modules' own business.
"""
from gtid_core.checks.catalogue import CHECKS, CheckInfo
from gtid_core.checks.divergence import split_errant
from gtid_core.checks.pair import FleetContext, ReplicaGroup, pair_reconnect_outcome, read_order, replica_executed
from gtid_core.checks.runners import run_pair_checks, run_server_checks
from gtid_core.checks.server import ServerReplication

__all__ = [
    "CHECKS",
    "CheckInfo",
    "FleetContext",
    "ReplicaGroup",
    "ServerReplication",
    "pair_reconnect_outcome",
    "read_order",
    "replica_executed",
    "run_pair_checks",
    "run_server_checks",
    "split_errant",
]
