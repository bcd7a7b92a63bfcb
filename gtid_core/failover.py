"""Failover readiness: what promoting each replica of a source would do to the others.

The audit already recomputes the checks a source makes when a replica reconnects. A failover is
nothing but a series of such reconnects: replica R of source S is promoted, and every sibling T
(S's other replicas, and S itself should it come back as a replica) is repointed to R with
``SOURCE_AUTO_POSITION=1``. This module applies :func:`~gtid_core.reconnect.simulate_auto_position_reconnect`
to those reconnects, with R playing the source, and says for each sibling what it would receive,
lose, or be refused, and for each candidate a verdict:

===========================  =======================================================================
``safe``                     every sibling streams from R and loses nothing; R has no errant GTIDs
``safe_after_catch_up``      the same, once R has applied its relay log (it retrieved transactions it
                             has not executed yet) and its running receiver has fetched what S still
                             has and a sibling already got (lag at read time)
``undetermined``             an input the model needs was not read (None); never a positive
``loses_transactions``       a sibling has transactions of S that R will never have: R's receiver is
                             stopped or failing, or S purged them; promoted, R makes them disappear
                             from the topology (the sibling keeps them, silently divergent)
``propagates_errant``        R has transactions S never executed; they flow to every sibling
``refuses_siblings``         some sibling's reconnect is refused: ER_MASTER_HAS_PURGED_REQUIRED_GTIDS
                             (R purged what it lacks -- lost errant GTIDs, or log_replica_updates=OFF),
                             ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER, or equal server_uuid / server_id
``cannot_serve``             R cannot be a source at all: log_bin OFF or gtid_mode not ON
===========================  =======================================================================

The verdicts are ordered from best to worst; a candidate's verdict is the worst that applies and
its ``reasons`` list every one. Candidates are ranked by verdict, then by how many transactions
would be lost, propagated or are still in flight.

**The sets, for candidate R and sibling T** (all from one audit run; ``∪`` is the union)::

    R_now      = R.gtid_executed                      what R has applied
    R_after    = R_now ∪ R.Retrieved_Gtid_Set         what R has once its applier caught up
    T_set      = T.gtid_executed ∪ T.Retrieved_Gtid_Set   (announced_gtid_set; for S: its gtid_executed)
    catch_up   = (T_set − R_now) ∩ R_after            safe once R applied its relay log
    missing    = (T_set ∩ S.gtid_executed) − R_after − T's other channels
      lost     = the part R can never fetch: in S.gtid_purged, or R's receiver stopped / failing
      in_flight= the rest, while R's receiver runs (lag at read time: it is still coming)
    sibling_errant = T_set − S.gtid_executed           T's own errant GTIDs: not counted against R
    errant     = R_after − S.gtid_executed − R's other channels − anonymous GTIDs R assigns
      to T     = errant − T_set, split by :func:`split_errant` into salvageable (still in R's binary
                 logs) and lost (in R.gtid_purged only: T is refused, R must never be promoted)
    reconnect  = simulate_auto_position_reconnect(R promoted, T_set), R promoted = R with
                 gtid_executed = R_after and, when log_replica_updates is OFF, gtid_purged grown by
                 what its applier will still apply without logging it

**Server code mirrored.** The reconnect is the one of ``sql/rpl_binlog_sender.cc``
(``Binlog_sender::check_start_file``: the replica's GTIDs of the source's own server_uuid, the
whole set on 5.6, must be in the source's gtid_executed; the source's gtid_purged must be a
subset of the replica's set from 5.6.22) and ``sql/binlog.cc``
(``MYSQL_BIN_LOG::find_first_log_not_in_gtid_set``: scan Previous_gtids newest to oldest), through
``gtid_core.reconnect``. The equal-identity refusal is the replica's receiver
(``sql/rpl_replica.cc``: "source and replica have equal MySQL server UUIDs" / "server ids",
Last_IO_Errno 13117 on 9.7). A replica with ``log_replica_updates=OFF`` keeps replicated GTIDs in
``mysql.gtid_executed`` and adds them to ``gtid_purged`` (WL#6559), so its binary log cannot serve
them: observed on 9.7.4, a sibling lacking them is refused with 13114 "purged required binary
logs" (jobs/sandbox/failover_scenarios.py proves every verdict the sandbox can produce by really
promoting the candidate).

**What it proves.** For the state read in this run: which reconnects the server would refuse,
which transactions a sibling has that the candidate cannot obtain, which errant transactions the
candidate would spread. The read order makes ``errant`` trustworthy (R is read before S, whose
gtid_executed only grows). ``lost`` is trustworthy because it needs R's receiver known stopped or
failing (R cannot have gained anything since it was read) or S having purged the transactions.

**What it cannot see.** Lag at read time is not lag at failure time: a replica that is behind at
02:00 may be current at 03:00 and vice versa, so ``in_flight`` is reported but never a finding, and
a healthy busy fleet yields ``safe_after_catch_up``. Transactions in flight on S (``gtid_owned``)
and what S commits after its read are invisible. Semi-synchronous acknowledgements, delayed
replicas (SOURCE_DELAY: R_after is still right, but catching up takes the delay), network
reachability, and whether T can even connect to R are not modelled. Replicating from a newer
source to an older replica is unsupported by MySQL; the model notes it but does not refuse.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from gtid_core.checks import CheckInfo, replica_executed, split_errant
from gtid_core.findings import Finding, Severity, empty_transaction_sql
from gtid_core.gtid_set import GtidSet
from gtid_core.reconnect import (
    ER_MASTER_HAS_PURGED_REQUIRED_GTIDS,
    ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER,
    ReconnectKind,
    ReconnectOutcome,
    announced_gtid_set,
    simulate_auto_position_reconnect,
)
from gtid_core.snapshots import ChannelSnapshot, ServerSnapshot

__all__ = [
    "CandidateAssessment",
    "FAILOVER_CHECKS",
    "FAILOVER_MODEL_VERSION",
    "FailoverModel",
    "FailoverReplica",
    "SiblingOutcome",
    "SiblingResult",
    "Verdict",
    "check_duplicate_server_identity",
    "failover_findings",
    "failover_rows",
    "model_failover",
    "split_errant",
]

#: Version of the model's logic, written to every failover_readiness row.
FAILOVER_MODEL_VERSION = 1

#: The replica's receiver refuses a source with its own identity (Last_IO_Errno 13117 on 9.7:
#: "Fatal error: The replica I/O thread stops because source and replica have equal MySQL server
#: UUIDs" / "... server ids").
EQUAL_SERVER_UUID = "equal server_uuid (fatal error 13117)"
EQUAL_SERVER_ID = "equal server_id (fatal error 13117)"
NO_BINARY_LOG = "source has no binary log (log_bin OFF): fatal error 1236 'Binary log is not open' (13114 on 9.7)"
GTID_MODE_NOT_ON = "source gtid_mode is not ON (AUTO_POSITION refused)"

_INT64_MAX = 2 ** 63 - 1


class Verdict(str, enum.Enum):
    """A candidate's verdict, best first (``rank`` orders them)."""

    SAFE = "safe"
    SAFE_AFTER_CATCH_UP = "safe_after_catch_up"
    UNDETERMINED = "undetermined"
    LOSES_TRANSACTIONS = "loses_transactions"
    PROPAGATES_ERRANT = "propagates_errant"
    REFUSES_SIBLINGS = "refuses_siblings"
    CANNOT_SERVE = "cannot_serve"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        """0 (safe) .. 6 (cannot_serve)."""
        return list(Verdict).index(self)

    @property
    def unsafe(self) -> bool:
        """True for the verdicts that make a candidate unsafe to promote (known, not undetermined)."""
        return self.rank >= Verdict.LOSES_TRANSACTIONS.rank


class SiblingResult(str, enum.Enum):
    """What happens when one sibling reconnects to the promoted candidate."""

    STREAMS = "streams"
    STREAMS_SKIPPING_PURGED = "streams_skipping_purged"   # candidate older than 5.6.22
    REFUSED = "refused"
    UNDETERMINED = "undetermined"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class FailoverReplica:
    """One replica of the source: its snapshot and its channel from the source.

    ``other_channels_gtids`` is what it gets through its other channels (multi-source), built as
    for :class:`gtid_core.checks.FleetContext`; None for a single-channel replica.
    """

    server: ServerSnapshot
    channel: ChannelSnapshot
    other_channels_gtids: GtidSet | None = None

    @property
    def name(self) -> str:
        return self.server.label

    @property
    def executed(self) -> GtidSet | None:
        """gtid_executed: the union of the variable and the channel's Executed_Gtid_Set."""
        return replica_executed(self.server, self.channel)

    @property
    def retrieved(self) -> GtidSet | None:
        return self.channel.retrieved_gtid_set

    @property
    def after_catch_up(self) -> GtidSet | None:
        """gtid_executed ∪ Retrieved_Gtid_Set; None when gtid_executed is unknown."""
        if self.executed is None:
            return None
        return self.executed | (self.retrieved or GtidSet.EMPTY)

    @property
    def receiver_failing(self) -> bool | None:
        """True when the receiver is stopped, or retrying a connection that fails
        (Replica_IO_Running = Connecting with Last_IO_Errno set); False when it runs (an error left
        from an earlier retry does not count); None when its state is unknown."""
        if self.channel.io_running == "CONNECTING" and self.channel.last_io_errno:
            return True
        running = self.channel.receiver_running
        return None if running is None else not running


@dataclass(frozen=True)
class SiblingOutcome:
    """What sibling T gets when it reconnects to the promoted candidate R (sets None = unknown)."""

    sibling: str
    role: str                                   # "replica" (of S) or "source" (S itself)
    result: SiblingResult
    sibling_set: GtidSet | None                 # what T announces
    catch_up: GtidSet | None                    # T has, R retrieved but has not applied
    lost: GtidSet | None                        # T has, R will never have
    in_flight: GtidSet | None                   # T has, R lacks, R's running receiver still fetches
    sibling_errant: GtidSet | None              # T's own GTIDs S never executed (not counted)
    errant: GtidSet | None                      # R's errant GTIDs T lacks: they flow to T
    errant_salvageable: GtidSet | None          # ... still in R's binary logs
    errant_lost: GtidSet | None                 # ... in R's gtid_purged only (T refused)
    refusal: str | None = None                  # error name when refused
    refused_missing: GtidSet | None = None      # what R purged that T lacks / T's offending GTIDs
    rule: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CandidateAssessment:
    """The verdict on promoting one replica, with every sibling's outcome."""

    source: str
    candidate: str
    channel: str
    verdict: Verdict
    reasons: tuple[str, ...]
    readiness: tuple[str, ...]
    executed: GtidSet | None
    pending_relay: GtidSet | None               # retrieved, not yet applied
    errant: GtidSet | None
    errant_salvageable: GtidSet | None
    errant_lost: GtidSet | None
    siblings: tuple[SiblingOutcome, ...]
    rank: int = 0                               # 1 = preferred; set by model_failover

    def _union(self, attr: str) -> GtidSet | None:
        out = GtidSet.EMPTY
        for s in self.siblings:
            value = getattr(s, attr)
            if value is None:
                continue
            out = out | value
        return out

    @property
    def lost(self) -> GtidSet:
        """Every transaction some sibling has and this candidate will never have."""
        return self._union("lost")

    @property
    def in_flight(self) -> GtidSet:
        return self._union("in_flight")

    @property
    def refused(self) -> tuple[SiblingOutcome, ...]:
        return tuple(s for s in self.siblings if s.result is SiblingResult.REFUSED)


@dataclass(frozen=True)
class FailoverModel:
    """One source's failover readiness: its candidates, ranked (best first)."""

    source: str
    candidates: tuple[CandidateAssessment, ...]

    @property
    def safe_candidates(self) -> tuple[CandidateAssessment, ...]:
        return tuple(c for c in self.candidates if c.verdict in (Verdict.SAFE, Verdict.SAFE_AFTER_CATCH_UP))

    @property
    def no_safe_candidate(self) -> bool:
        """True when there are candidates and every one is known to be unsafe (an undetermined
        candidate keeps this False: unknown is never a positive)."""
        return bool(self.candidates) and all(c.verdict.unsafe for c in self.candidates)

    def ranking_text(self) -> str:
        """'1. r2 (safe); 2. r1 (loses_transactions: ...)' for remediation texts."""
        return "; ".join(f"{c.rank}. {c.candidate} ({c.verdict}"
                         + (f": {c.reasons[0]}" if c.reasons and c.verdict is not Verdict.SAFE else "") + ")"
                         for c in self.candidates)


# --------------------------------------------------------------------------------------------
# helpers

def _text(s: GtidSet | None) -> str | None:
    return s.to_text(multiline=False) if s is not None else None


def _count(s: GtidSet | None) -> int | None:
    if s is None:
        return None
    n = s.count()
    return n if n <= _INT64_MAX else None


def _short(s: GtidSet, limit: int = 200) -> str:
    text = s.to_text(multiline=False)
    return text if len(text) <= limit else text[:limit] + f"... ({s.count()} GTIDs)"


def _minus(a: GtidSet | None, b: GtidSet | None) -> GtidSet | None:
    if a is None or b is None:
        return None
    return a - b


def _anonymous_assigned_uuid(replica: FailoverReplica) -> str | None:
    kind = replica.channel.assign_gtids_to_anonymous_transactions_type
    if kind == "LOCAL":
        return replica.server.server_uuid
    if kind == "UUID":
        return replica.channel.assign_gtids_to_anonymous_transactions_value
    return None


def _promoted(candidate: FailoverReplica, after: GtidSet) -> ServerSnapshot:
    """The candidate as a source once its applier has caught up: gtid_executed = R_after; with
    log_replica_updates OFF the transactions still to apply are not logged, so they join
    gtid_purged (9.7 adds replicated GTIDs to gtid_purged when it does not log them)."""
    purged = candidate.server.gtid_purged
    if candidate.server.log_replica_updates is False and purged is not None and candidate.executed is not None:
        purged = purged | (after - candidate.executed)
    return dataclasses.replace(candidate.server, gtid_executed=after, gtid_purged=purged)


def _version_note(r: ServerSnapshot, t: ServerSnapshot) -> str | None:
    if r.version is None or t.version is None:
        return None
    if (r.version.major, r.version.minor) > (t.version.major, t.version.minor):
        return (f"{t.label} runs MySQL {t.version}, older than {r.label} ({r.version}): replicating from a "
                "newer source to an older replica is not supported")
    return None


# --------------------------------------------------------------------------------------------
# the model

def _sibling(source: ServerSnapshot, source_name: str, candidate: FailoverReplica, promoted: ServerSnapshot | None,
             serve_block: str | None, errant: GtidSet | None, sibling: FailoverReplica | None) -> SiblingOutcome:
    """One sibling's reconnect to the promoted candidate (``sibling`` None: S itself)."""
    r_now, r_after = candidate.executed, candidate.after_catch_up
    s_exec, s_purged = source.gtid_executed, source.gtid_purged
    if sibling is None:
        t_server, role, t_set, t_other = source, "source", source.gtid_executed, None
    else:
        t_server, role, t_other = sibling.server, "replica", sibling.other_channels_gtids
        t_exec = sibling.executed
        t_set = None if t_exec is None else announced_gtid_set(
            t_exec, sibling.retrieved or GtidSet.EMPTY, replica_version=t_server.version)
    name = source_name if sibling is None else sibling.name
    notes: list[str] = []
    note = _version_note(candidate.server, t_server)
    if note:
        notes.append(note)

    catch_up = lost = in_flight = t_errant = to_t = salvageable = errant_lost = None
    if t_set is not None and r_now is not None and r_after is not None:
        catch_up = (t_set - r_now) & r_after
    if t_set is not None and s_exec is not None:
        t_errant = t_set - s_exec
        if t_other is not None:
            t_errant = t_errant - t_other
    if t_set is not None and s_exec is not None and r_after is not None:
        missing = (t_set & s_exec) - r_after
        if t_other is not None:
            missing = missing - t_other
        if candidate.other_channels_gtids is not None:
            missing = missing - candidate.other_channels_gtids
        gone = missing & s_purged if s_purged is not None else None
        rest = missing - gone if gone is not None else missing
        failing = candidate.receiver_failing
        if failing is True:                   # R cannot have gained anything since it was read
            lost, in_flight = missing, GtidSet.EMPTY
        elif gone is not None:                # purged on S: R can never fetch them
            lost = gone
            in_flight = rest if failing is False else (GtidSet.EMPTY if not rest else None)
        elif not missing:
            lost, in_flight = GtidSet.EMPTY, GtidSet.EMPTY
        # else unknown (None): S's gtid_purged decides, and was not read
    if errant is not None and t_set is not None:
        to_t = errant - t_set
        salvageable, errant_lost = split_errant(candidate.server, to_t)

    def outcome(result: SiblingResult, **kw: Any) -> SiblingOutcome:
        return SiblingOutcome(
            sibling=name, role=role, result=result, sibling_set=t_set, catch_up=catch_up, lost=lost,
            in_flight=in_flight, sibling_errant=t_errant, errant=to_t, errant_salvageable=salvageable,
            errant_lost=errant_lost, notes=tuple(notes), **kw)

    r = candidate.server
    if r.server_uuid is not None and r.server_uuid == t_server.server_uuid:
        return outcome(SiblingResult.REFUSED, refusal=EQUAL_SERVER_UUID,
                       rule=f"{name} and {candidate.name} have the same server_uuid {r.server_uuid}")
    if r.server_id is not None and r.server_id == t_server.server_id:
        return outcome(SiblingResult.REFUSED, refusal=EQUAL_SERVER_ID,
                       rule=f"{name} and {candidate.name} have the same server_id {r.server_id}")
    if serve_block is not None:
        return outcome(SiblingResult.REFUSED, refusal=serve_block, rule=serve_block)
    if promoted is None or t_set is None:
        return outcome(SiblingResult.UNDETERMINED, rule="a GTID set needed was not read")
    rc: ReconnectOutcome = simulate_auto_position_reconnect(promoted, t_set)
    if rc.version_assumed:
        notes.append(f"{candidate.name}'s version is unknown: the newest reconnect rules were assumed")
    if rc.refused:
        return outcome(SiblingResult.REFUSED, refusal=rc.error,
                       refused_missing=rc.missing if rc.kind is ReconnectKind.SOURCE_PURGED_REQUIRED else rc.offending,
                       rule=rc.rule)
    if rc.kind is ReconnectKind.STREAMS_SKIPPING_PURGED:
        return outcome(SiblingResult.STREAMS_SKIPPING_PURGED, refused_missing=rc.missing, rule=rc.rule)
    if rc.kind is ReconnectKind.UNDETERMINED:
        return outcome(SiblingResult.UNDETERMINED, rule=rc.reason or rc.rule)
    return outcome(SiblingResult.STREAMS, rule=rc.rule)


def _readiness(r: ServerSnapshot) -> tuple[str | None, list[str], bool]:
    """(reason it cannot serve or None, readiness notes, whether something needed is unknown)."""
    notes: list[str] = []
    unknown = False
    block = None
    if r.log_bin is False:
        block = NO_BINARY_LOG
    elif r.gtid_mode is not None and r.gtid_mode != "ON":
        block = GTID_MODE_NOT_ON
    if r.log_bin is None or r.gtid_mode is None:
        unknown = True
        notes.append("log_bin or gtid_mode was not read: whether it can serve AUTO_POSITION replicas is unknown")
    if r.log_replica_updates is False:
        notes.append("log_replica_updates is OFF: its binary log holds none of the transactions it replicated, "
                     "so any sibling behind it at the failover is refused (ER_MASTER_HAS_PURGED_REQUIRED_GTIDS)")
    if r.super_read_only is True or r.read_only is True:
        notes.append("read_only/super_read_only is ON (as a replica should be): turn it OFF at promotion")
    elif r.read_only is False:
        notes.append("read_only is OFF on a replica: local writes create errant transactions at any time")
    return block, notes, unknown


def _assess(source: ServerSnapshot, source_name: str, candidate: FailoverReplica,
            others: Sequence[FailoverReplica]) -> CandidateAssessment:
    r = candidate.server
    r_now, r_after = candidate.executed, candidate.after_catch_up
    block, readiness, unknown = _readiness(r)

    pending = _minus(r_after, r_now)
    errant = salvageable = errant_lost = None
    if r_after is not None and source.gtid_executed is not None:
        errant = r_after - source.gtid_executed
        if candidate.other_channels_gtids is not None:
            errant = errant - candidate.other_channels_gtids
        assigned = _anonymous_assigned_uuid(candidate)
        if assigned:
            errant = errant - errant.for_uuid(assigned)
        salvageable, errant_lost = split_errant(r, errant)

    promoted = _promoted(candidate, r_after) if r_after is not None else None
    siblings = [_sibling(source, source_name, candidate, promoted, block, errant, t) for t in others]
    siblings.append(_sibling(source, source_name, candidate, promoted, block, errant, None))

    flagged: list[tuple[Verdict, str]] = []      # (verdict it implies, reason)
    if block is not None:
        flagged.append((Verdict.CANNOT_SERVE, f"cannot serve replicas: {block}"))
    for s in siblings:
        if s.result is SiblingResult.REFUSED and block is None:
            what = f" (lacks {s.refused_missing.count()}: {_short(s.refused_missing, 120)})" if s.refused_missing else ""
            if s.refusal == ER_MASTER_HAS_PURGED_REQUIRED_GTIDS and r.log_replica_updates is False:
                what += (f", which {candidate.name} applied without logging them (log_replica_updates=OFF: "
                         "its binary log cannot serve a sibling that is behind it)")
            flagged.append((Verdict.REFUSES_SIBLINGS, f"{s.sibling} would be refused: {s.refusal}{what}"))
        if s.lost:
            flagged.append((Verdict.LOSES_TRANSACTIONS,
                            f"{s.sibling} has {s.lost.count()} transaction(s) of {source_name} that "
                            f"{candidate.name} will never have ({_short(s.lost, 120)})"))
        if s.result is SiblingResult.STREAMS_SKIPPING_PURGED and s.refused_missing:
            flagged.append((Verdict.LOSES_TRANSACTIONS,
                            f"{s.sibling} would silently never receive {s.refused_missing.count()} purged "
                            f"transaction(s) ({candidate.name} is older than 5.6.22)"))
        if s.result is SiblingResult.UNDETERMINED or s.lost is None or s.in_flight is None or s.errant is None:
            unknown = True
    if errant:
        where = (f"; {errant_lost.count()} of them purged from its binary logs (lost errant: never promote it)"
                 if errant_lost else "")
        flagged.append((Verdict.PROPAGATES_ERRANT,
                        f"has {errant.count()} errant transaction(s) {source_name} never executed "
                        f"({_short(errant, 120)}){where}"))
    if errant is None:
        unknown = True
    flagged.sort(key=lambda vr: -vr[0].rank)            # the reason behind the verdict first
    reasons = [text for _, text in flagged]
    found = {v for v, _ in flagged}

    worst = max(found, key=lambda v: v.rank) if found else None
    if worst is not None:
        verdict = worst
    elif unknown:
        verdict = Verdict.UNDETERMINED
        reasons.append("an input the model needs was not read (see the sibling rows)")
    else:
        in_flight = GtidSet.EMPTY
        for s in siblings:
            in_flight = in_flight | (s.in_flight or GtidSet.EMPTY)
        if pending or in_flight:
            verdict = Verdict.SAFE_AFTER_CATCH_UP
            if pending:
                reasons.append(f"must first apply {pending.count()} retrieved transaction(s) from its relay log")
            if in_flight:
                reasons.append(f"its running receiver is still fetching {in_flight.count()} transaction(s) "
                               f"a sibling already has")
        else:
            verdict = Verdict.SAFE
    return CandidateAssessment(
        source=source_name, candidate=candidate.name, channel=candidate.channel.channel_name,
        verdict=verdict, reasons=tuple(reasons), readiness=tuple(readiness), executed=r_now,
        pending_relay=pending, errant=errant, errant_salvageable=salvageable, errant_lost=errant_lost,
        siblings=tuple(siblings))


def _sort_key(c: CandidateAssessment) -> tuple:
    def n(s: GtidSet | None) -> int:
        return s.count() if s is not None else 0
    log_replica_updates_off = c.readiness and any("log_replica_updates is OFF" in x for x in c.readiness)
    return (c.verdict.rank, n(c.lost), n(c.errant), len(c.refused), bool(log_replica_updates_off),
            n(c.in_flight), n(c.pending_relay), c.candidate)


def model_failover(source: ServerSnapshot, replicas: Sequence[FailoverReplica],
                   source_name: str | None = None) -> FailoverModel:
    """Promote each replica of ``source`` in turn; return the candidates ranked, best first.

    ``replicas`` are the source's replicas, each with its channel from this source. Every other
    replica and the source itself are the siblings of a candidate. Pure: no input is modified.
    """
    name = source_name or source.label
    assessed = [_assess(source, name, r, [t for t in replicas if t is not r]) for r in replicas]
    assessed.sort(key=_sort_key)
    ranked = tuple(dataclasses.replace(c, rank=i + 1) for i, c in enumerate(assessed))
    return FailoverModel(source=name, candidates=ranked)


# --------------------------------------------------------------------------------------------
# rows of the failover_readiness table

def failover_rows(model: FailoverModel, *, run_id: str | None = None, run_date: _dt.date | None = None,
                  cluster: str | None = None) -> list[dict[str, Any]]:
    """One row per (source, candidate, sibling), in the ``failover_readiness`` layout
    (schemas/failover.py): sets as canonical one-line text with their counts (None = unknown)."""
    rows = []
    for c in model.candidates:
        for s in c.siblings:
            rows.append({
                "run_id": run_id, "run_date": run_date, "cluster": cluster,
                "source": model.source, "candidate": c.candidate, "channel": c.channel,
                "sibling": s.sibling, "sibling_role": s.role,
                "candidate_rank": c.rank, "verdict": c.verdict.value,
                "verdict_reasons": "\n".join(c.reasons) or None,
                "candidate_readiness": "\n".join(c.readiness) or None,
                "sibling_result": s.result.value, "refusal": s.refusal, "reconnect_rule": s.rule or None,
                "notes": "\n".join(s.notes) or None,
                "candidate_gtid_executed": _text(c.executed),
                "pending_relay_gtid_set": _text(c.pending_relay), "pending_relay_count": _count(c.pending_relay),
                "sibling_gtid_set": _text(s.sibling_set),
                "catch_up_gtid_set": _text(s.catch_up), "catch_up_count": _count(s.catch_up),
                "lost_gtid_set": _text(s.lost), "lost_count": _count(s.lost),
                "in_flight_gtid_set": _text(s.in_flight), "in_flight_count": _count(s.in_flight),
                "sibling_errant_gtid_set": _text(s.sibling_errant), "sibling_errant_count": _count(s.sibling_errant),
                "errant_gtid_set": _text(s.errant), "errant_count": _count(s.errant),
                "errant_salvageable_gtid_set": _text(s.errant_salvageable),
                "errant_salvageable_count": _count(s.errant_salvageable),
                "errant_lost_gtid_set": _text(s.errant_lost), "errant_lost_count": _count(s.errant_lost),
                "refused_missing_gtid_set": _text(s.refused_missing),
                "refused_missing_count": _count(s.refused_missing),
                "model_version": FAILOVER_MODEL_VERSION,
            })
    return rows


# --------------------------------------------------------------------------------------------
# findings

def _info(check_id: str, severity: Severity, scope: str, title: str, meaning: str, server_error: str | None,
          remediation: str, version: int = 1) -> CheckInfo:
    return CheckInfo(check_id, version, severity, scope, title, meaning, server_error, remediation)


FAILOVER_CHECKS: Mapping[str, CheckInfo] = MappingProxyType({i.check_id: i for i in [
    _info("no_safe_failover_candidate", Severity.CRITICAL, "server",
          "No replica of this source can be promoted safely",
          "The source has replicas, and promoting any of them (repointing the others and the source "
          "with AUTO_POSITION) would lose transactions a sibling has, spread errant transactions, refuse "
          "a sibling, or is impossible (log_bin OFF, gtid_mode not ON). If the source fails now, every "
          "choice costs data or replicas. Candidates whose state is unknown keep it silent.",
          "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS / ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER or silent loss at the "
          "failover",
          "Make one candidate safe before it is needed: start stopped receivers so a replica catches up, "
          "apply to the best-ranked candidate the transactions only a sibling has, neutralise errant "
          "transactions with empty transactions on the source and every replica, enable "
          "log_replica_updates. The failover_readiness table ranks the candidates and lists each set."),
    _info("failover_candidate_unsafe", Severity.WARNING, "pair",
          "Promoting this replica would lose, spread or refuse transactions",
          "Promoting this replica of its source and repointing the siblings (the source's other replicas, "
          "and the source itself should it come back) with AUTO_POSITION would: lose transactions a "
          "sibling has that this replica cannot obtain (its receiver is stopped or failing, or the source "
          "purged them), propagate errant transactions the source never executed (lost errant ones, "
          "purged from its binary logs, make it unpromotable), get a sibling refused, or fail because it "
          "cannot serve replicas. Lag at read time with a running receiver is not reported.",
          "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (13114 'purged required binary logs'), "
          "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER, or 13117 'equal MySQL server UUIDs' on the siblings",
          "Prefer a better-ranked candidate (failover_readiness). To make this one safe: salvage the "
          "transactions only a sibling has by replicating them to it first, neutralise errant GTIDs "
          "with empty transactions on the source and the siblings (SQL in the finding), fix "
          "log_replica_updates / log_bin / gtid_mode, give cloned servers their own server_uuid."),
    _info("duplicate_server_uuid", Severity.CRITICAL, "server",
          "Two servers share a server_uuid (or a server_id within one replication group)",
          "Two servers of one cluster (the inventory's cluster label) report the same server_uuid, e.g. a datadir cloned with its auto.cnf "
          "kept. Their GTIDs collide: both number transactions uuid:1, uuid:2, ..., and a replica that "
          "receives both silently skips one side's transactions as already executed. A source kicks one "
          "of two replicas with the same identity off (13114 'A replica with the same server_uuid/server_id "
          "... has connected'), and a replica refuses a source with its own identity (13117). The same "
          "server_id within one replication group breaks replication in the same ways.",
          "13114 'a replica with the same server_uuid/server_id has connected', 13117 'equal MySQL server UUIDs'",
          "Stop the cloned server, delete auto.cnf from its datadir and restart it (it generates a new "
          "server_uuid); give every server of a replication group its own server_id (SET PERSIST server_id). "
          "Then audit the GTIDs both wrote under the shared uuid: a replica may have skipped some of them."),
]})


def _finding(check_id: str, server: str, title: str, detail: str, *, source: str | None = None,
             channel: str | None = None, gtid_set: GtidSet | None = None, evidence: Mapping | None = None,
             remediation: str | None = None) -> Finding:
    info = FAILOVER_CHECKS[check_id]
    return Finding(check_id=check_id, severity=info.default_severity, server=server, source=source,
                   channel=channel, title=title, detail=detail, gtid_set=gtid_set,
                   gtid_count=_count(gtid_set) if gtid_set is not None else None,
                   evidence=dict(evidence or {}), check_version=info.version,
                   remediation=remediation if remediation is not None else info.remediation)


def _salvage_steps(model: FailoverModel, c: CandidateAssessment) -> list[str]:
    """What a DBA does to make candidate ``c`` safe, sibling by sibling."""
    steps: list[str] = []
    for s in c.siblings:
        if s.lost:
            steps.append(
                f"Salvage from {s.sibling}: it has {s.lost.count()} transaction(s) {c.candidate} will never get "
                f"({_short(s.lost)}). Before promoting {c.candidate}, apply them to it from {s.sibling}'s binary "
                f"logs (e.g. replicate {c.candidate} from {s.sibling} with SOURCE_AUTO_POSITION=1 until "
                f"SELECT GTID_SUBSET('{s.lost.to_text(multiline=False)}', @@GLOBAL.gtid_executed) returns 1 on "
                f"{c.candidate}), or, while {model.source} is up, START REPLICA on {c.candidate}.")
    if c.pending_relay:
        steps.append(f"Wait until {c.candidate} has applied its relay log ({c.pending_relay.count()} transaction(s)) "
                     "before promoting it (the applier must be running).")
    if c.errant:
        targets = ", ".join(s.sibling for s in c.siblings)
        lost_part = (f" {c.errant_lost.count()} of them are purged from {c.candidate}'s binary logs (lost errant "
                     f"GTIDs): nobody can replay or inspect them; never promote it without neutralising them."
                     if c.errant_lost else "")
        steps.append(f"Errant transactions on {c.candidate}: {_short(c.errant)}.{lost_part} If their changes "
                     f"are wanted or harmless, commit empty transactions with these GTIDs on {targets} (not on "
                     f"{c.candidate}):\n{empty_transaction_sql(c.errant)}")
    for s in c.refused:
        if s.refusal in (EQUAL_SERVER_UUID, EQUAL_SERVER_ID):
            steps.append(f"{s.sibling} has {c.candidate}'s identity ({s.rule}): stop the clone, delete its "
                         "auto.cnf (new server_uuid) or give it its own server_id, restart it.")
        elif s.refusal == ER_MASTER_HAS_PURGED_REQUIRED_GTIDS and s.refused_missing:
            steps.append(f"{s.sibling} lacks {s.refused_missing.count()} transaction(s) {c.candidate} no longer has "
                         f"in its binary logs ({_short(s.refused_missing)}): let {s.sibling} catch up from "
                         f"{model.source} first, or plan to reprovision it from {c.candidate} after the promotion.")
        elif s.refusal == ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER and s.refused_missing:
            steps.append(f"{s.sibling} has transactions of {c.candidate}'s own uuid that {c.candidate} lacks "
                         f"({_short(s.refused_missing)}): find out where they come from before promoting.")
        elif s.refusal in (NO_BINARY_LOG, GTID_MODE_NOT_ON):
            steps.append(f"{c.candidate} cannot serve replicas ({s.refusal}): enable it (restart needed) or never "
                         "promote it.")
            break
    return steps


def _candidate_evidence(model: FailoverModel, c: CandidateAssessment) -> dict[str, Any]:
    return {
        "verdict": c.verdict.value, "rank": c.rank, "ranking": model.ranking_text(),
        "reasons": "\n".join(c.reasons), "readiness": "\n".join(c.readiness),
        "candidate_gtid_executed": _text(c.executed), "pending_relay": _text(c.pending_relay),
        "lost": _text(c.lost), "errant": _text(c.errant), "errant_salvageable": _text(c.errant_salvageable),
        "errant_lost": _text(c.errant_lost),
        "refused_siblings": "; ".join(f"{s.sibling}: {s.refusal}" for s in c.refused) or None,
        "siblings": "\n".join(
            f"{s.sibling} ({s.role}): {s.result}"
            + (f", lost {_text(s.lost)}" if s.lost else "") + (f", errant {_text(s.errant)}" if s.errant else "")
            + (f", refused {s.refusal}" if s.refusal else "") for s in c.siblings),
        "model_version": FAILOVER_MODEL_VERSION,
    }


def failover_findings(model: FailoverModel) -> list[Finding]:
    """``failover_candidate_unsafe`` per candidate known to be unsafe, and
    ``no_safe_failover_candidate`` when every candidate is (an undetermined one keeps it silent).

    The findings' ``gtid_set`` is what is at stake: the lost transactions, else the errant ones, else
    what a refused sibling lacks. Remediation ranks the candidates and says what to salvage from where.
    """
    out: list[Finding] = []
    for c in model.candidates:
        if not c.verdict.unsafe:
            continue
        at_stake = c.lost or c.errant or next((s.refused_missing for s in c.refused if s.refused_missing), None)
        steps = _salvage_steps(model, c)
        remediation = (f"Candidates for {model.source}, best first: {model.ranking_text()}.\n"
                       + ("\n".join(steps) if steps else FAILOVER_CHECKS["failover_candidate_unsafe"].remediation))
        out.append(_finding(
            "failover_candidate_unsafe", c.candidate,
            f"Promoting {c.candidate} (replica of {model.source}): {c.verdict}",
            f"If {model.source} fails and {c.candidate} is promoted, with the other replicas and {model.source} "
            f"repointed to it with AUTO_POSITION: " + "; ".join(c.reasons) + ".",
            source=model.source, channel=c.channel, gtid_set=at_stake or None,
            evidence=_candidate_evidence(model, c), remediation=remediation))
    if model.no_safe_candidate:
        best = model.candidates[0]
        steps = _salvage_steps(model, best)
        lost = GtidSet.EMPTY
        for c in model.candidates:
            lost = lost | c.lost
        out.append(_finding(
            "no_safe_failover_candidate", model.source,
            f"{model.source}: none of its {len(model.candidates)} replica(s) can be promoted safely",
            f"Every replica of {model.source} is unsafe to promote: "
            + "; ".join(f"{c.candidate}: {c.verdict} ({c.reasons[0] if c.reasons else '-'})" for c in model.candidates)
            + f". If {model.source} fails now, the least bad choice is {best.candidate}.",
            gtid_set=lost or None,
            evidence={"ranking": model.ranking_text(), "candidates": len(model.candidates),
                      "verdicts": ", ".join(f"{c.candidate}={c.verdict}" for c in model.candidates),
                      "model_version": FAILOVER_MODEL_VERSION},
            remediation=(f"Candidates, best first: {model.ranking_text()}.\nTo make {best.candidate} safe:\n"
                         + "\n".join(steps)) if steps else None))
    return out


# --------------------------------------------------------------------------------------------
# duplicate identities

def _groups(names: Iterable[str], edges: Iterable[tuple[str, str]]) -> dict[str, str]:
    parent = {n: n for n in names}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {n: find(n) for n in list(parent)}


def check_duplicate_server_identity(servers: Sequence[ServerSnapshot],
                                    replication_edges: Iterable[tuple[str, str]] = ()) -> list[Finding]:
    """duplicate_server_uuid: servers sharing a server_uuid among ``servers`` (the
    audit passes one cluster label's servers at a time), or a server_id
    within one replication group (the connected components of ``replication_edges``, pairs of
    inventory names (replica, source) of every resolved channel).

    One finding per server involved, naming the others. Sound: both values are the servers' own
    (@@GLOBAL.server_uuid, @@GLOBAL.server_id); an unknown value (None) matches nothing. Mirrors the
    source's dump thread, which kills the older connection of a replica with the same
    server_uuid/server_id (9.7: 13114 'A replica with the same server_uuid/server_id as this replica
    has connected to the source'), and the receiver's refusal of a source with its own identity
    (13117, ``sql/rpl_replica.cc``). Blind spot: a server not in this run (unreachable, not
    inventoried) is not compared; server_ids are not compared across unconnected groups (harmless).
    """
    by_name = {s.label: s for s in servers}
    groups = _groups(by_name, replication_edges)
    problems: dict[str, list[str]] = {}
    uuid_peers: dict[str, list[str]] = {}
    for s in servers:
        if s.server_uuid is not None:
            uuid_peers.setdefault(s.server_uuid, []).append(s.label)
    for uuid, names in uuid_peers.items():
        if len(names) > 1:
            for n in names:
                others = ", ".join(o for o in sorted(names) if o != n)
                problems.setdefault(n, []).append(f"server_uuid {uuid} is also the server_uuid of {others}")
    id_peers: dict[tuple[str, int], list[str]] = {}
    for s in servers:
        if s.server_id is not None:
            id_peers.setdefault((groups.get(s.label, s.label), s.server_id), []).append(s.label)
    for (_group, server_id), names in id_peers.items():
        if len(names) > 1:
            for n in names:
                others = ", ".join(o for o in sorted(names) if o != n)
                problems.setdefault(n, []).append(
                    f"server_id {server_id} is also the server_id of {others} in the same replication group")
    out = []
    for name in sorted(problems):
        s = by_name[name]
        out.append(_finding(
            "duplicate_server_uuid", name,
            f"{name} shares its identity with another server",
            f"{name}: " + "; ".join(problems[name]) + ". GTIDs written under a shared server_uuid collide, and a "
            "replica receiving both sides silently skips one; sources and replicas with the same identity "
            "disconnect each other.",
            evidence={"server_uuid": s.server_uuid, "server_id": s.server_id,
                      "collisions": "\n".join(problems[name])}))
    return out
