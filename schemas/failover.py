"""The ``failover_readiness`` table: what promoting each replica of each source would do.

Written by the audit from :func:`gtid_core.failover.failover_rows`: one row per (run, source,
candidate, sibling) for the siblings whose outcome matters (every sibling of the preferred
candidate, the source itself, and of the other candidates each sibling that does not just stream;
version 3, issue #19: a source with R replicas wrote R squared rows). GTID sets are the server's
canonical text on one line; every set has its count beside it. NULL means unknown (an input was
not read), never empty: an empty set is ''.
"""
from __future__ import annotations

from schemas.base import Column, LogicalType as L, TableSchema, register, run_columns

__all__ = ["FAILOVER_READINESS"]

C = Column


def _set(name: str, meaning: str) -> tuple[Column, Column]:
    return (C(f"{name}_gtid_set", L.STRING, True, f"{meaning}: canonical GTID set text ('' = none, NULL = unknown)"),
            C(f"{name}_count", L.INT64, True, f"transactions in {name}_gtid_set; NULL if unknown or beyond int64"))


FAILOVER_READINESS = register(TableSchema(
    name="failover_readiness",
    version=3,
    upgrades_from=2,
    description="One row per source, candidate replica and sibling: what happens if the source fails, the "
                "candidate is promoted and the sibling (another replica of the source, or the source itself "
                "coming back) reconnects to it with AUTO_POSITION. Every sibling of the rank-1 candidate has "
                "a row, and the source itself for every candidate; other candidates list only the siblings that "
                "do not just stream (siblings_not_listed counts the others). The candidate's verdict and rank "
                "repeat on each of its rows (docs/failover.md).",
    key=("run_id", "source", "candidate", "sibling"),
    columns=run_columns() + (
        C("cluster", L.STRING, True, "cluster of the source (configuration)"),
        C("source", L.STRING, False, "the source whose failure is modelled (inventory name)"),
        C("candidate", L.STRING, False, "the replica of the source that would be promoted"),
        C("channel", L.STRING, True, "the candidate's channel from the source ('' = default channel)"),
        C("sibling", L.STRING, False, "the server repointed to the candidate: another replica, or the source"),
        C("sibling_role", L.STRING, False, "'replica' (another replica of the source) or 'source' (the source "
                                           "itself, should it come back as a replica)"),
        C("candidate_rank", L.INT32, False, "1 = the preferred candidate of this source"),
        C("verdict", L.STRING, False, "safe, safe_after_catch_up, undetermined, spreads_other_channels, "
                                      "propagates_errant, refuses_siblings, loses_transactions or cannot_serve "
                                      "(best to worst kind; candidate_rank orders by cost)"),
        C("verdict_reasons", L.STRING, True, "why, one reason a line, the one behind the verdict first; at most ten, then a line counting the others (each sibling's row has its sets)"),
        C("candidate_readiness", L.STRING, True, "notes on the candidate's own settings (log_replica_updates, "
                                                  "read_only, unknown variables), one a line"),
        C("cost_lost_count", L.INT64, False, "transactions of the source lost if the candidate is promoted (kept "
                                             "only by a sibling, or thrown away with a sibling's relay log)"),
        C("cost_refused_siblings", L.INT32, False, "siblings refused (not counting those the source already refuses)"),
        C("cost_spread_count", L.INT64, False, "GTIDs the source never executed that flow to the siblings "
                                               "(errant, other channels)"),
        C("caused_by", L.STRING, True, "the findings the candidate's problems follow from ('check on server', one "
                                       "a line); fix those first"),
        C("sibling_result", L.STRING, False, "streams, streams_skipping_purged (candidate < 5.6.22), refused, "
                                             "undetermined"),
        C("refusal", L.STRING, True, "the error the sibling would get when refused"),
        C("reconnect_rule", L.STRING, True, "the reconnect rule applied, in words"),
        C("already_refused_by_source", L.BOOL, False, "the source itself already refuses the sibling over GTIDs it "
                                                      "purged too: the sibling's own finding, not the candidate's"),
        C("notes", L.STRING, True, "other notes on this sibling (version order, assumed version)"),
        C("candidate_gtid_executed", L.STRING, True, "the candidate's gtid_executed when read"),
        C("promoted_gtid_executed", L.STRING, True, "the candidate's gtid_executed once promoted (its relay log "
                                                    "applied, unless its applier failed)"),
        *_set("pending_relay", "retrieved by the candidate but not yet applied (it must apply them first)"),
        C("sibling_gtid_set", L.STRING, True, "what the sibling announces once repointed: its gtid_executed (the "
                                              "repoint purges its relay logs)"),
        *_set("catch_up", "sibling has, candidate retrieved but has not applied: safe after catch-up"),
        *_set("lost", "sibling has (from the source), candidate will never have: lost on promotion unless salvaged"),
        *_set("discarded", "in the sibling's relay log only, thrown away by the repoint, candidate will never "
                           "have: lost"),
        *_set("in_flight", "sibling has, candidate lacks, candidate's running receiver still fetches (lag at read time)"),
        *_set("sibling_errant", "the sibling's own GTIDs the source never executed (not counted against the candidate)"),
        *_set("errant", "candidate's errant GTIDs the sibling lacks: they would flow to it"),
        *_set("errant_salvageable", "part of errant still in the candidate's binary logs"),
        *_set("errant_lost", "part of errant only in the candidate's gtid_purged (the sibling is refused)"),
        *_set("other_channels", "GTIDs of the candidate's other channels the sibling lacks: they would flow to it"),
        *_set("refused_missing", "why the sibling is refused: what it lacks (purged) or its offending GTIDs"),
        C("model_version", L.INT32, False, "version of the failover model that wrote the row"),
        C("siblings_not_listed", L.INT32, True, "siblings of this candidate without a row: they stream from it "
                                                "and lose, spread and are refused nothing (at most they wait for "
                                                "its catch-up); 0 for the rank-1 candidate; NULL on rows written "
                                                "before version 3, which listed every sibling", since=3),
    ),
))
