"""Failover readiness: what promoting each replica of a source would do to the others.

The audit already recomputes the checks a source makes when a replica reconnects. A failover is
nothing but a series of such reconnects, done the way a DBA does it: replica R of source S is
promoted (``STOP REPLICA IO_THREAD``, its applier finishes the relay log, ``RESET REPLICA ALL``
for S's channel), and every sibling T (S's other replicas, and S itself should it come back as a
replica) is repointed to R with ``STOP REPLICA``, ``CHANGE REPLICATION SOURCE TO ...
SOURCE_AUTO_POSITION=1`` and ``START REPLICA``. This module applies
:func:`~gtid_core.reconnect.simulate_auto_position_reconnect` to those reconnects, with R playing
the source, and says for each sibling what it would receive, lose, or be refused, and for each
candidate a verdict (the gravest kind of cost, best first):

==========================  =======================================================================
``safe``                    every sibling streams from R and loses nothing; R has no errant GTIDs
``safe_after_catch_up``     the same, once R has applied its relay log and its running receiver has
                            fetched what S still has and a sibling already got (lag at read time),
                            and once each sibling refused only for what its relay log holds has
                            applied it before the repoint (``needs_relay_log_applied``, v3), after
                            R has applied what of it was in flight to R (v4)
``undetermined``            an input the model needs was not read (None); never a positive
``spreads_other_channels``  R replicates from other sources too: their GTIDs flow into every sibling
``propagates_errant``       R has transactions S never executed; they flow to every sibling
``refuses_siblings``        some sibling's reconnect is refused: ER_MASTER_HAS_PURGED_REQUIRED_GTIDS
                            (R purged what it lacks -- lost errant GTIDs, or log_replica_updates=OFF),
                            ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER, or equal server_uuid / server_id
``loses_transactions``      a sibling has transactions of S that R will never have: R's receiver is
                            stopped or failing, its applier failed on an error, or S purged them
``cannot_serve``            R cannot be a source at all: log_bin OFF or gtid_mode not ON
==========================  =======================================================================

Candidates are *ranked* by what the promotion costs (:class:`PromotionCost`): safe first, then
safe after catch-up, undetermined, and the unsafe ones by able to serve, fewer lost transactions,
fewer refused siblings, fewer spread GTIDs -- a lost transaction weighs more than a spread one, and
more more than fewer.

**The sets, for candidate R and sibling T** (all from one audit run; ``∪`` is the union)::

    R_now      = R.gtid_executed                      what R has applied
    R_after    = R_now ∪ R.Retrieved_Gtid_Set         what R has once promoted; R_now alone when R's
                                                      applier stopped on an error (Last_SQL_Errno)
    T_holds    = T.gtid_executed ∪ T.Retrieved_Gtid_Set   everything T has (for S: its gtid_executed)
    T_set      = T.gtid_executed                      what T announces: the repoint purged its relay log
    catch_up   = (T_set − R_now) ∩ R_after            safe once R applied its relay log
    missing    = (T_holds ∩ S.gtid_executed) − R_after − R's other channels
      never    = the part R can never fetch: in S.gtid_purged, or R's receiver stopped / failing,
                 or R's applier failed
        lost      = never ∩ T_set: T keeps them, R never has them (silently divergent)
        discarded = never − T_set: only in T's relay log, thrown away by the repoint (gone)
      in_flight= the rest, while R's receiver runs (lag at read time: it is still coming)
    sibling_errant = T_holds − S.gtid_executed         T's own errant GTIDs: not counted against R
    errant     = R_after − S.gtid_executed − R's other channels − anonymous GTIDs R assigns
      to T     = errant − T_set, split by :func:`split_errant` into salvageable (still in R's binary
                 logs) and lost (in R.gtid_purged only: T is refused, R must never be promoted)
    other_channels = (R's other channels' GTIDs ∩ R_after) − T_set − S.gtid_executed: they flow to T
    reconnect  = simulate_auto_position_reconnect(R promoted, T_set), R promoted = R with
                 gtid_executed = R_after and, when log_replica_updates is OFF, gtid_purged grown by
                 what its applier will still apply without logging it

A refusal of T over GTIDs S itself purged, when S already refuses T as read, restates T's own
``source_purged_required_gtids`` and is not counted against R (``already_refused``).

**Server code mirrored.** The reconnect is the one of ``sql/rpl_binlog_sender.cc``
(``Binlog_sender::check_start_file``: the replica's GTIDs of the source's own server_uuid, the
whole set on 5.6, must be in the source's gtid_executed; the source's gtid_purged must be a
subset of the replica's set from 5.6.22) and ``sql/binlog.cc``
(``MYSQL_BIN_LOG::find_first_log_not_in_gtid_set``: scan Previous_gtids newest to oldest), through
``gtid_core.reconnect``. The repoint's relay-log purge is ``change_master()`` in
``sql/rpl_replica.cc`` (``need_relay_log_purge`` when the receiver's source changes and no
``RELAY_LOG_FILE``/``RELAY_LOG_POS`` is given; the receiver then rebuilds Retrieved_Gtid_Set from
the empty relay log). The equal-identity refusal is the replica's receiver
(``sql/rpl_replica.cc``: "source and replica have equal MySQL server UUIDs" / "server ids",
Last_IO_Errno 13117 on 9.7). A replica with ``log_replica_updates=OFF`` keeps replicated GTIDs in
``mysql.gtid_executed`` and adds them to ``gtid_purged`` (WL#6559), so its binary log cannot serve
them: observed on 9.7.4, a sibling lacking them is refused with 13114 "purged required binary
logs". Every prediction is compared with real promotions on 9.7 by
``jobs/sandbox/failover_differential.py`` (docs/failover.md has the figures).

**What it proves.** For the state read in this run: which reconnects the server would refuse,
which transactions a sibling has that the candidate cannot obtain, which GTIDs the candidate would
spread. ``errant`` is trustworthy only when R was read before S (:func:`gtid_core.checks.read_order`,
the same instants and rule as the pair checks): S's gtid_executed only grows. Otherwise the
candidate is ``unconfirmed`` and no finding about it is critical. ``lost`` is trustworthy because
it needs R's receiver known stopped or failing, R's applier failed (R cannot apply anything it
lacks), or S having purged the transactions.

**What it cannot see.** Lag at read time is not lag at failure time: a replica that is behind at
02:00 may be current at 03:00 and vice versa, so ``in_flight`` is reported but never a finding, and
a healthy busy fleet yields ``safe_after_catch_up``. The one structural exception is
``log_replica_updates=OFF``: such a candidate refuses whichever sibling is behind it when S fails,
so it is ``refuses_siblings`` whatever the lag when read. Transactions in flight on S
(``gtid_owned``) and what S commits after its read are invisible. Semi-synchronous
acknowledgements, network reachability, and whether T can even connect to R are not modelled.
Replicating from a newer source to an older replica is unsupported by MySQL; the model notes it
but does not refuse.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from gtid_core.checks.catalogue import CheckInfo, _all_of
from gtid_core.checks.divergence import split_errant
from gtid_core.checks.pair import read_order, replica_executed
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
from gtid_core.syntax import in_syntax_of
from gtid_core.versions import MySQLVersion

__all__ = [
    "CandidateAssessment",
    "FAILOVER_CHECKS",
    "FAILOVER_MODEL_VERSION",
    "FailoverModel",
    "FailoverReplica",
    "PromotionCost",
    "SiblingOutcome",
    "SiblingResult",
    "Verdict",
    "failover_findings",
    "failover_rows",
    "listed_siblings",
    "quiet_sibling",
    "model_failover",
    "split_errant",
]

#: Version of the model's logic, written to every failover_readiness row. 3: a sibling refused only
#: for what it holds in its relay log streams once it has applied it (``needs_relay_log_applied``),
#: a catch-up condition like the candidate's own relay log, not a refusal; among candidates with
#: the same relay log to apply, an undelayed one ranks first. 4: that relay log may hold what the
#: candidate's running receiver was still fetching when read (lag at read time, as for any
#: sibling): the sibling streams once the candidate has it and the sibling has applied its relay
#: log, where v3 kept it refused (a demo under load warned on a healthy candidate). 5: when that
#: part is not known to be in flight only because the candidate's receiver state was not read, the
#: sibling is undetermined, not refused (v4 warned from an input not read).
FAILOVER_MODEL_VERSION = 5

#: The replica's receiver refuses a source with its own identity (Last_IO_Errno 13117 on 9.7:
#: "Fatal error: The replica I/O thread stops because source and replica have equal MySQL server
#: UUIDs" / "... server ids").
EQUAL_SERVER_UUID = "equal server_uuid (fatal error 13117)"
EQUAL_SERVER_ID = "equal server_id (fatal error 13117)"
NO_BINARY_LOG = "source has no binary log (log_bin OFF): fatal error 1236 'Binary log is not open' (13114 on 9.7)"
GTID_MODE_NOT_ON = "source gtid_mode is not ON (AUTO_POSITION refused)"

_INT64_MAX = 2 ** 63 - 1


class Verdict(str, enum.Enum):
    """A candidate's verdict: the gravest kind of cost its promotion has, best first (``rank``
    orders them). Candidates are *ranked* by what the promotion costs (:func:`promotion_cost`),
    not by this category alone."""

    SAFE = "safe"
    SAFE_AFTER_CATCH_UP = "safe_after_catch_up"
    UNDETERMINED = "undetermined"
    SPREADS_OTHER_CHANNELS = "spreads_other_channels"
    PROPAGATES_ERRANT = "propagates_errant"
    REFUSES_SIBLINGS = "refuses_siblings"
    LOSES_TRANSACTIONS = "loses_transactions"
    CANNOT_SERVE = "cannot_serve"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        """0 (safe) .. 7 (cannot_serve)."""
        return list(Verdict).index(self)

    @property
    def unsafe(self) -> bool:
        """True for the verdicts that make a candidate unsafe to promote (known, not undetermined)."""
        return self.rank >= Verdict.SPREADS_OTHER_CHANNELS.rank


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
    def holds(self) -> GtidSet | None:
        """gtid_executed ∪ Retrieved_Gtid_Set: every transaction it has, applied or in its relay
        log; None when gtid_executed is unknown."""
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

    @property
    def applier_failing(self) -> bool:
        """True when the applier stopped on an error (Last_SQL_Errno set, not running): its relay
        log cannot be applied until a person fixes the cause (``START REPLICA SQL_THREAD`` meets
        the same error again). A stopped applier without an error is not failing: the promotion
        starts it."""
        return bool(self.channel.last_sql_errno) and self.channel.applier_running is not True

    @property
    def after_catch_up(self) -> GtidSet | None:
        """What its gtid_executed is once promoted: gtid_executed ∪ Retrieved_Gtid_Set when its
        applier can apply the relay log, only gtid_executed when the applier failed; None when
        gtid_executed is unknown."""
        if self.applier_failing:
            return self.executed
        return self.holds


@dataclass(frozen=True)
class SiblingOutcome:
    """What sibling T gets when it reconnects to the promoted candidate R (sets None = unknown).

    T is repointed as a DBA does it: ``STOP REPLICA``, ``CHANGE REPLICATION SOURCE TO`` R, which
    purges T's relay logs (``change_master()`` in ``sql/rpl_replica.cc`` calls
    ``purge_relay_logs`` when the receiver's source changes and no relay position is given), and
    ``START REPLICA``: T announces only its gtid_executed (``sibling_set``). What T had retrieved
    and not applied is thrown away and must come from R again.
    """

    sibling: str
    role: str                                   # "replica" (of S) or "source" (S itself)
    result: SiblingResult
    sibling_set: GtidSet | None                 # what T announces to R: its gtid_executed
    catch_up: GtidSet | None                    # T has, R retrieved but has not applied
    lost: GtidSet | None                        # T executed (keeps, divergent), R will never have
    in_flight: GtidSet | None                   # T has, R lacks, R's running receiver still fetches
    sibling_errant: GtidSet | None              # T's own GTIDs S never executed (not counted)
    errant: GtidSet | None                      # R's errant GTIDs T lacks: they flow to T
    errant_salvageable: GtidSet | None          # ... still in R's binary logs
    errant_lost: GtidSet | None                 # ... in R's gtid_purged only (T refused)
    refusal: str | None = None                  # error name when refused
    refused_missing: GtidSet | None = None      # what R purged that T lacks / T's offending GTIDs
    rule: str = ""
    notes: tuple[str, ...] = ()
    discarded: GtidSet | None = None            # T's relay backlog the repoint throws away, R never has
    other_channels: GtidSet | None = None       # R's other channels' GTIDs T lacks: they flow to T
    already_refused: bool = False               # S itself refuses T already: T's own finding, not R's
    unserved: GtidSet | None = None             # of ``offers``, what T cannot send from its binary logs
    relay_backlog: GtidSet | None = None        # T retrieved, not applied (its relay log); None for S or unknown
    channel: str = ""                           # T's channel from S ('' for S itself or the default channel)
    source_delay: int | None = None             # T's SOURCE_DELAY (SQL_Delay) on that channel; None: unknown
    version: MySQLVersion | None = None         # T's version: the words of the statements it is given
    needs_relay_log_applied: GtidSet | None = None  # streams only once T applied its relay log: what a repoint
                                                    # before that would be refused for (the candidate purged it)

    @property
    def offers(self) -> GtidSet:
        """What T could give R before the promotion: ``lost``, and ``discarded`` once T's applier
        has applied it (unknown parts count as none)."""
        return (self.lost or GtidSet.EMPTY) | (self.discarded or GtidSet.EMPTY)


@dataclass(frozen=True)
class PromotionCost:
    """What promoting a candidate costs, in the order it is ranked by: a lost transaction weighs
    more than a refused sibling, a refused sibling more than a spread GTID, more more than fewer."""

    cannot_serve: bool
    lost: int                   # transactions of S no server has after the promotion but a sibling's (or none)
    refused: int                # siblings refused (not counting those S already refuses)
    spread: int                 # GTIDs S never executed that flow to the siblings (errant, other channels)

    def text(self) -> str:
        if self.cannot_serve:
            return "cannot serve replicas"
        parts = [f"loses {self.lost} transaction(s)" if self.lost else "",
                 f"refuses {self.refused} sibling(s)" if self.refused else "",
                 f"spreads {self.spread} GTID(s)" if self.spread else ""]
        return ", ".join(p for p in parts if p) or "costs nothing"


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
    promoted_gtid_executed: GtidSet | None = None   # its gtid_executed once promoted
    other_channels: GtidSet | None = None       # GTIDs of its other channels (they flow to the siblings)
    errant_own: GtidSet | None = None           # of ``errant``, a multi-source candidate's own writes (no channel brought them)
    errant_confirmed: bool | None = None        # read before S (the errant set is trustworthy)
    causes: tuple[tuple[str, str], ...] = ()    # (check_id, server) of the findings each reason follows from
    derived: bool = False                       # every reason follows from one of ``causes``
    unconfirmed: bool = False                   # unsafe only by errant GTIDs the read order does not confirm
    source_delay: int | None = None             # its SOURCE_DELAY (SQL_Delay) on this channel; None: unknown
    version: MySQLVersion | None = None         # its version: the words of the statements it is given

    def _union(self, attr: str) -> GtidSet:
        out = GtidSet.EMPTY
        for s in self.siblings:
            value = getattr(s, attr)
            if value is None:
                continue
            out = out | value
        return out

    @property
    def lost(self) -> GtidSet:
        """Every transaction of S that some sibling has and this candidate will never have: kept by
        the sibling (divergent) or thrown away with its relay log at the repoint."""
        return self._union("lost") | self._union("discarded")

    @property
    def in_flight(self) -> GtidSet:
        return self._union("in_flight")

    @property
    def spread(self) -> GtidSet:
        """GTIDs S never executed that would flow to the siblings that stream."""
        out = GtidSet.EMPTY
        for s in self.siblings:
            if s.result is SiblingResult.REFUSED:
                continue
            for value in (s.errant, s.other_channels):
                if value is not None:
                    out = out | value
        return out

    @property
    def refused(self) -> tuple[SiblingOutcome, ...]:
        return tuple(s for s in self.siblings if s.result is SiblingResult.REFUSED)

    @property
    def cost(self) -> PromotionCost:
        return PromotionCost(
            cannot_serve=self.verdict is Verdict.CANNOT_SERVE, lost=self.lost.count(),
            refused=sum(1 for s in self.refused if not s.already_refused), spread=self.spread.count())


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

    def ranking_sentence(self, *, first_told: bool = False) -> str:
        """The findings' first line of what to do: the ranking, or the one candidate there is."""
        if len(self.candidates) == 1:
            only = self.ranking_text(first_told=first_told, numbered=False)
            return f"The only replica of {self.source} to promote: {only}."
        return f"Candidates for {self.source}, best first: {self.ranking_text(first_told=first_told)}."

    def ranking_text(self, *, first_told: bool = False, numbered: bool = True) -> str:
        """'1. r2 (safe); 2. r1 (loses_transactions, loses 3 transaction(s): ...)' for texts: the
        first MAX_REASONS candidates, then how many more (every finding of a source carries it,
        so a source with 200 replicas would repeat 200 ranks in each of its 200 findings).
        ``first_told``: the text beside it already gives the first candidate's steps (the advice
        of a safe_after_catch_up choice), so its rank does not repeat them."""
        out = []
        for c in self.candidates[:MAX_REASONS]:
            text = f"{f'{c.rank}. ' if numbered else ''}{c.candidate} ({c.verdict}"
            if c.verdict.unsafe:
                text += f", {c.cost.text()}"
            if c.reasons and c.verdict is not Verdict.SAFE:
                text += (": the steps are in the advice above" if first_told and c is self.candidates[0]
                         else f": {c.reasons[0]}")
            out.append(text + ")")
        more = len(self.candidates) - MAX_REASONS
        if more > 0:
            out.append(f"and {more} more candidate(s), ranked in failover_readiness")
        return "; ".join(out)


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


def _refused_by_source_now(source: ServerSnapshot, sibling: FailoverReplica) -> bool:
    """True when S itself, as read, would refuse T's reconnect because S purged what T lacks
    (T's own ``source_purged_required_gtids``): a refusal of T by a candidate over GTIDs S also
    purged restates that finding."""
    holds = sibling.holds
    if holds is None or source.gtid_executed is None:
        return False
    announced = announced_gtid_set(sibling.executed, sibling.retrieved or GtidSet.EMPTY,
                                   replica_version=sibling.server.version, source_version=source.version)
    rc = simulate_auto_position_reconnect(source, announced)
    return rc.kind is ReconnectKind.SOURCE_PURGED_REQUIRED


# --------------------------------------------------------------------------------------------
# the model

def _unserved(t: ServerSnapshot, role: str, lost: GtidSet | None, discarded: GtidSet | None) -> GtidSet | None:
    """Of what sibling ``t`` could give the candidate (``lost``, and ``discarded`` once its
    applier has applied it), what ``t`` cannot send from its binary logs: everything without a
    binary log (or, on a replica, without log_replica_updates: what it applied is not logged),
    else what of ``lost`` is in its gtid_purged (``discarded`` is not applied yet, so not purged);
    None where a variable was not read."""
    lost, discarded = lost or GtidSet.EMPTY, discarded or GtidSet.EMPTY
    held = lost | discarded
    if not held:
        return GtidSet.EMPTY
    logs = [t.log_bin] + ([t.log_replica_updates] if role == "replica" else [])
    if False in logs:
        return held
    if None in logs or t.gtid_purged is None:
        return None
    return lost & t.gtid_purged


def _sibling(source: ServerSnapshot, source_name: str, candidate: FailoverReplica, promoted: ServerSnapshot | None,
             serve_block: str | None, errant: GtidSet | None, sibling: FailoverReplica | None) -> SiblingOutcome:
    """One sibling's reconnect to the promoted candidate (``sibling`` None: S itself)."""
    r_now, r_after = candidate.executed, candidate.after_catch_up
    s_exec, s_purged = source.gtid_executed, source.gtid_purged
    if sibling is None:
        t_server, role, t_set, t_holds, t_other = source, "source", s_exec, s_exec, None
    else:
        t_server, role, t_other = sibling.server, "replica", sibling.other_channels_gtids
        t_set, t_holds = sibling.executed, sibling.holds   # the repoint purges T's relay logs
    name = source_name if sibling is None else sibling.name
    notes: list[str] = []
    note = _version_note(candidate.server, t_server)
    if note:
        notes.append(note)

    catch_up = lost = discarded = in_flight = t_errant = to_t = salvageable = errant_lost = other = None
    fetchable = None    # what R's receiver would still fetch from S if it runs (S has it, not purged)
    if t_set is not None and r_now is not None and r_after is not None:
        catch_up = (t_set - r_now) & r_after
    if t_holds is not None and s_exec is not None:
        t_errant = t_holds - s_exec
        if t_other is not None:
            t_errant = t_errant - t_other
    if t_holds is not None and s_exec is not None and r_after is not None:
        # T's other channels are not subtracted: what of them S executed reached S (a cycle, or S
        # replicating from the same source) and R lacks is lost to R (differential seeds 571, 1216)
        missing = (t_holds & s_exec) - r_after
        if candidate.other_channels_gtids is not None:   # R's own other channels keep feeding it
            missing = missing - candidate.other_channels_gtids
        gone = missing & s_purged if s_purged is not None else None
        rest = missing - gone if gone is not None else missing
        failing = candidate.receiver_failing
        every: GtidSet | None = None
        if failing is True or candidate.applier_failing:   # R cannot apply anything it lacks now
            every, in_flight = missing, GtidSet.EMPTY
        elif gone is not None:                # purged on S: R can never fetch them
            every, fetchable = gone, rest
            in_flight = rest if failing is False else (GtidSet.EMPTY if not rest else None)
        elif not missing:
            every, in_flight = GtidSet.EMPTY, GtidSet.EMPTY
        # else unknown (None): S's gtid_purged decides, and was not read
        if every is not None and t_set is not None:
            lost, discarded = every & t_set, every - t_set
    if errant is not None and t_set is not None:
        to_t = errant - t_set
        salvageable, errant_lost = split_errant(candidate.server, to_t)
    if candidate.other_channels_gtids is not None and r_after is not None and t_set is not None:
        # what S executed too (it reached S through a cycle) is S's history catching up, not spread
        # (differential seed 1064)
        other = (candidate.other_channels_gtids & r_after) - t_set - (s_exec or GtidSet.EMPTY)

    unserved = _unserved(t_server, role, lost, discarded)

    def outcome(result: SiblingResult, **kw: Any) -> SiblingOutcome:
        return SiblingOutcome(
            sibling=name, role=role, result=result, sibling_set=t_set, catch_up=catch_up, lost=lost,
            in_flight=in_flight, sibling_errant=t_errant, errant=to_t, errant_salvageable=salvageable,
            errant_lost=errant_lost, notes=tuple(notes), discarded=discarded, unserved=unserved,
            relay_backlog=(t_holds - t_set if sibling is not None and t_holds is not None and t_set is not None
                           else None),
            channel=sibling.channel.channel_name if sibling is not None else "",
            source_delay=sibling.channel.sql_delay if sibling is not None else None, version=t_server.version,
            other_channels=other if result is not SiblingResult.REFUSED else GtidSet.EMPTY if other is not None
            else None, **kw)

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
    # T's relay log is purged by the repoint: it announces its gtid_executed (untagged only when
    # T is 8.3+ and R older, as the replica's request_dump does)
    announced = announced_gtid_set(t_set, GtidSet.EMPTY, replica_version=t_server.version,
                                   source_version=r.version)
    rc: ReconnectOutcome = simulate_auto_position_reconnect(promoted, announced)
    if rc.version_assumed:
        notes.append(f"{candidate.name}'s version is unknown: the newest reconnect rules were assumed")
    if rc.refused:
        missing_set = rc.missing if rc.kind is ReconnectKind.SOURCE_PURGED_REQUIRED else rc.offending
        already = (sibling is not None and rc.kind is ReconnectKind.SOURCE_PURGED_REQUIRED
                   and missing_set is not None and s_purged is not None and not (missing_set - s_purged)
                   and _refused_by_source_now(source, sibling))
        if already:
            notes.append(f"{source_name} itself already refuses {name} (source_purged_required_gtids on {name}): "
                         f"what {name} lacks was purged on {source_name} too, so this refusal is {name}'s own "
                         "finding, not the candidate's")
        drains = False if already else _drains_to_stream(rc, missing_set, candidate, sibling, t_holds, t_set,
                                                          r_after, discarded, in_flight, fetchable)
        drained = None if drains is False else simulate_auto_position_reconnect(promoted, announced_gtid_set(
            t_holds, GtidSet.EMPTY, replica_version=t_server.version, source_version=r.version))
        if drained is not None and drained.kind is ReconnectKind.STREAMS:
            if drains:
                return outcome(SiblingResult.STREAMS, needs_relay_log_applied=missing_set, rule=(
                    f"streams once its relay log is applied: repointed before that, the repoint purges the "
                    f"relay log and {candidate.name} refuses it ({rc.error}: {rc.rule})"))
            beyond = (t_holds - t_set) - r_after   # v5: whether R gets it is unknown, not a refusal
            return outcome(SiblingResult.UNDETERMINED, rule=(
                f"streams once its relay log is applied only if {candidate.name} first gets the "
                f"{beyond.count()} transaction(s) of that relay log it lacked when read "
                f"({_short(beyond, 120)}): whether {candidate.name}'s receiver runs was not read "
                f"(repointed as it is, {candidate.name} refuses it: {rc.error}: {rc.rule})"))
        return outcome(SiblingResult.REFUSED, refusal=rc.error, refused_missing=missing_set, rule=rc.rule,
                       already_refused=already)
    if rc.kind is ReconnectKind.STREAMS_SKIPPING_PURGED:
        return outcome(SiblingResult.STREAMS_SKIPPING_PURGED, refused_missing=rc.missing, rule=rc.rule)
    if rc.kind is ReconnectKind.UNDETERMINED:
        return outcome(SiblingResult.UNDETERMINED, rule=rc.reason or rc.rule)
    return outcome(SiblingResult.STREAMS, rule=rc.rule)


def _drains_to_stream(rc: ReconnectOutcome, missing: GtidSet | None, candidate: FailoverReplica,
                      sibling: FailoverReplica | None, holds: GtidSet | None, executed: GtidSet | None,
                      r_after: GtidSet | None, discarded: GtidSet | None, in_flight: GtidSet | None,
                      fetchable: GtidSet | None = None) -> bool | None:
    """Whether a sibling refused for lacking what the candidate purged holds all of it in its
    relay log, so that applied before the repoint (what the advice says, and what orchestrator's
    "stop replication nicely" does) its gtid_executed has it and the reconnect is not refused
    (proven on 9.7.4 by tests/sandbox/test_failover_scenarios.py). Every condition is known, or
    the sibling stays refused:

    * its applier has no error (Last_SQL_Errno read and 0): it can apply the relay log;
    * the candidate will have the sibling's whole relay backlog: in ``r_after``, or ``in_flight``
      to it (S has it, has not purged it, the candidate's receiver is running and its applier has
      not failed: lag at read time, which the model never counts against a candidate, since a
      sibling read a moment after the candidate holds what S committed in between; v4). Applying
      the backlog must not give the sibling what the candidate cannot obtain (with the source
      down, that would be a silent divergence, where a repoint as it is would have been refused),
      and nothing is ``discarded``. With some of it in flight the candidate is
      ``safe_after_catch_up``, and the step (:func:`_drain_condition`) has the sibling apply its
      relay log only once the candidate has applied that part;
    * the sibling has the boundary parser (5.7.6+): Retrieved_Gtid_Set holds only whole
      transactions, so none of the set is a transaction cut short in the relay log;
    * the candidate logs what it replicates (log_replica_updates not OFF): otherwise any sibling
      behind it is refused whatever its relay log holds when the source fails (the structural
      refuses_siblings reason), and it keeps its refusals as v2 did.

    None (v5) when every condition holds but the second is unknown only because the candidate's
    receiver state was not read (``in_flight`` None) with part of the backlog beyond ``r_after``,
    all of it ``fetchable`` (S has it and has not purged it):
    the sibling then streams or is lost to divergence depending on that receiver, so the outcome is
    undetermined, never a refusal the server was not shown to make (v4 kept it refused, a warning
    from an input not read)."""
    if not (sibling is not None and rc.kind is ReconnectKind.SOURCE_PURGED_REQUIRED and bool(missing)
            and sibling.channel.last_sql_errno == 0 and not sibling.applier_failing
            and sibling.server.version is not None and sibling.server.version.has_boundary_parser
            and candidate.server.log_replica_updates is not False
            and holds is not None and executed is not None and r_after is not None
            and missing <= holds - executed and discarded is not None and not discarded):
        return False
    return _backlog_reaches(holds - executed, r_after, in_flight, fetchable)


def _backlog_reaches(backlog: GtidSet, r_after: GtidSet, in_flight: GtidSet | None,
                     fetchable: GtidSet | None = None) -> bool | None:
    """Whether the candidate will have all of a sibling's relay ``backlog``: it is in ``r_after``,
    or the rest is ``in_flight`` to it. None when the rest is ``fetchable`` from S but whether the
    candidate's receiver runs is unknown (``in_flight`` None)."""
    rest = backlog - r_after
    if not rest:
        return True
    if in_flight is not None:
        return rest <= in_flight
    return None if fetchable is not None and rest <= fetchable else False


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


def _receiver_cause(candidate: FailoverReplica) -> tuple[str, str]:
    ch = candidate.channel
    if ch.last_io_errno or ch.receiver_last_error_number:
        return ("replication_receiver_error", candidate.name)
    return ("replication_stopped", candidate.name)


def _assess(source: ServerSnapshot, source_name: str, candidate: FailoverReplica,
            others: Sequence[FailoverReplica]) -> CandidateAssessment:
    r = candidate.server
    r_now, r_after = candidate.executed, candidate.after_catch_up
    block, readiness, unknown = _readiness(r)

    pending = _minus(candidate.holds, r_now)
    errant = salvageable = errant_lost = None
    if r_after is not None and source.gtid_executed is not None:
        errant = r_after - source.gtid_executed
        if candidate.other_channels_gtids is not None:
            errant = errant - candidate.other_channels_gtids
        assigned = _anonymous_assigned_uuid(candidate)
        if assigned:
            errant = errant - errant.for_uuid(assigned)
        salvageable, errant_lost = split_errant(r, errant)
    order_held, order_why = read_order(r, candidate.channel, source)

    promoted = _promoted(candidate, r_after) if r_after is not None else None
    siblings = [_sibling(source, source_name, candidate, promoted, block, errant, t) for t in others]
    siblings.append(_sibling(source, source_name, candidate, promoted, block, errant, None))

    # (verdict it implies, reason, the findings it follows from: empty when it is the candidate's own)
    flagged: list[tuple[Verdict, str, tuple[tuple[str, str], ...]]] = []
    if block is not None:
        flagged.append((Verdict.CANNOT_SERVE, f"cannot serve replicas: {block}",
                        (("gtid_mode_off", candidate.name),) if block == GTID_MODE_NOT_ON else ()))
    if candidate.applier_failing and pending:
        ch = candidate.channel
        flagged.append((Verdict.LOSES_TRANSACTIONS,
                        f"its applier stopped on error {ch.last_sql_errno} ({(ch.last_sql_error or '')[:120]!r}): "
                        f"the {pending.count()} retrieved transaction(s) in its relay log cannot be applied until "
                        "a person fixes that", (("replication_applier_error", candidate.name),)))
    replica_siblings = [s for s in siblings if s.role == "replica"]
    if r.log_replica_updates is False and replica_siblings and block is None:
        flagged.append((Verdict.REFUSES_SIBLINGS,
                        "log_replica_updates is OFF: its binary log holds none of the transactions it replicated, "
                        "so any sibling behind it when the source fails is refused "
                        "(ER_MASTER_HAS_PURGED_REQUIRED_GTIDS), whatever the lag when it was read", ()))
    for s in siblings:
        if s.result is SiblingResult.REFUSED and block is None and not s.already_refused:
            what = f" (lacks {s.refused_missing.count()}: {_short(s.refused_missing, 120)})" if s.refused_missing else ""
            cause: tuple[tuple[str, str], ...] = ()
            if s.refusal in (EQUAL_SERVER_UUID, EQUAL_SERVER_ID):
                cause = (("duplicate_server_uuid", candidate.name),)
            elif s.refusal == ER_MASTER_HAS_PURGED_REQUIRED_GTIDS and s.errant_lost and s.refused_missing \
                    and not (s.refused_missing - s.errant_lost) and order_held is True:
                cause = (("errant_transactions", candidate.name),)
            if s.refusal == ER_MASTER_HAS_PURGED_REQUIRED_GTIDS and r.log_replica_updates is False:
                what += (f", which {candidate.name} applied without logging them (log_replica_updates=OFF: "
                         "its binary log cannot serve a sibling that is behind it)")
            flagged.append((Verdict.REFUSES_SIBLINGS, f"{s.sibling} would be refused: {s.refusal}{what}", cause))
        kept, thrown = s.lost or GtidSet.EMPTY, s.discarded or GtidSet.EMPTY
        if kept or thrown:
            cause = ()
            rest = kept | thrown
            if source.gtid_purged is not None and (rest & source.gtid_purged):
                cause += (("source_purged_required_gtids", candidate.name),)   # no receiver could fetch them
                rest = rest - source.gtid_purged
            if rest and candidate.receiver_failing is True:
                cause += (_receiver_cause(candidate),)
            elif rest and candidate.applier_failing:
                cause += (("replication_applier_error", candidate.name),)
            elif rest:
                cause = ()
            parts = []
            # "executed by S", not "of S": their GTIDs may carry another server's uuid (S's own source)
            if kept:
                whose = "it executed" if s.role == "source" else f"{source_name} executed"
                parts.append(f"{s.sibling} has {kept.count()} transaction(s) {whose} that "
                             f"{candidate.name} will never have ({_short(kept, 120)})")
            if thrown:
                parts.append(f"{s.sibling} would throw away {thrown.count()} transaction(s) from {source_name} still "
                             f"in its relay log (the repoint purges it) that {candidate.name} will never have "
                             f"({_short(thrown, 120)})")
            flagged.append((Verdict.LOSES_TRANSACTIONS, "; ".join(parts), cause))
        if s.result is SiblingResult.STREAMS_SKIPPING_PURGED and s.refused_missing:
            flagged.append((Verdict.LOSES_TRANSACTIONS,
                            f"{s.sibling} would silently never receive {s.refused_missing.count()} purged "
                            f"transaction(s) ({candidate.name} is older than 5.6.22)", ()))
        if s.result is SiblingResult.UNDETERMINED or s.lost is None or s.in_flight is None or s.errant is None:
            unknown = True
    spread_other = GtidSet.EMPTY
    for s in siblings:
        if s.result is not SiblingResult.REFUSED and s.other_channels:
            spread_other = spread_other | s.other_channels
    if spread_other:
        flagged.append((Verdict.SPREADS_OTHER_CHANNELS,
                        f"replicates from other sources too: {spread_other.count()} GTID(s) of its other channels "
                        f"({_short(spread_other, 120)}) would flow into every sibling and {source_name} after the "
                        "promotion", ()))
    if errant:
        where = (f"; {errant_lost.count()} of them purged from its binary logs (lost errant: never promote it)"
                 if errant_lost else "")
        confirmed = order_held is True
        flagged.append((Verdict.PROPAGATES_ERRANT,
                        f"has {errant.count()} errant transaction(s) {source_name} never executed "
                        f"({_short(errant, 120)}){where}" + ("" if confirmed else f" (UNCONFIRMED: {order_why})"),
                        (("errant_transactions", candidate.name),) if confirmed else ()))
    if errant is None:
        unknown = True
    flagged.sort(key=lambda vr: -vr[0].rank)            # the reason behind the verdict first
    reasons = [text for _, text, _ in flagged]
    drains = [s for s in siblings if s.needs_relay_log_applied]
    reasons += [f"{s.sibling} must first apply its relay log ({s.relay_backlog.count() if s.relay_backlog else '?'} "
                f"transaction(s)): repointed before that, it lacks {s.needs_relay_log_applied.count()} "
                f"{candidate.name} purged ({_short(s.needs_relay_log_applied, 120)}) and is refused "
                f"({ER_MASTER_HAS_PURGED_REQUIRED_GTIDS}); before repointing it, "
                f"{_drain_condition(candidate.name, source_name, s)}{_sibling_applies_relay_log(s)}"
                for s in drains]
    if len(reasons) > MAX_REASONS:
        # one reason per sibling: a source with 200 replicas would repeat 200 of them on each of
        # the candidate's failover_readiness rows; each of those siblings has a row of its own
        # with its sets (it is not quiet: listed_siblings)
        reasons = reasons[:MAX_REASONS] + [f"and {len(reasons) - MAX_REASONS} more reason(s) of these kinds, one "
                                           "per sibling: each sibling's failover_readiness row has its sets"]
    found = {v for v, _, _ in flagged}
    causes = tuple(dict.fromkeys(c for _, _, cs in flagged for c in cs))
    derived = bool(flagged) and all(cs for _, _, cs in flagged)
    # Unconfirmed: its only unsafe reason is an errant set the read order does not confirm (the pair
    # check errant_transactions says "unconfirmed" under the same condition, read_order()).
    unconfirmed = bool(errant) and order_held is not True and all(v is Verdict.PROPAGATES_ERRANT
                                                                  for v, _, _ in flagged)

    worst = max(found, key=lambda v: v.rank) if found else None
    if worst is not None:
        verdict = worst
    elif unknown:
        verdict = Verdict.UNDETERMINED
        reasons.append("an input the model needs was not read, or the read order does not confirm it "
                       "(see the sibling rows and the readiness notes)")
    else:
        in_flight = GtidSet.EMPTY
        for s in siblings:
            in_flight = in_flight | (s.in_flight or GtidSet.EMPTY)
        if pending or in_flight or drains:
            verdict = Verdict.SAFE_AFTER_CATCH_UP
            if pending:
                delay = candidate.channel.sql_delay
                undelay = ("set it to 0 first" if _changes_delay_with_receiver_running(candidate.server.version)
                           else "let it pass")
                reasons.append(f"must first apply {pending.count()} retrieved transaction(s) from its relay log"
                               + (in_syntax_of(f" (SOURCE_DELAY = {delay} s: {undelay})",
                                               candidate.server.version) if delay else ""))
            if in_flight:
                reasons.append(f"its running receiver is still fetching {in_flight.count()} transaction(s) "
                               f"a sibling already has")
        else:
            verdict = Verdict.SAFE
    return CandidateAssessment(
        source=source_name, candidate=candidate.name, channel=candidate.channel.channel_name,
        verdict=verdict, reasons=tuple(reasons), readiness=tuple(readiness), executed=r_now,
        pending_relay=pending, errant=errant, errant_salvageable=salvageable, errant_lost=errant_lost,
        siblings=tuple(siblings), promoted_gtid_executed=r_after,
        other_channels=candidate.other_channels_gtids, errant_confirmed=order_held,
        causes=causes, derived=derived, unconfirmed=unconfirmed, source_delay=candidate.channel.sql_delay,
        version=candidate.server.version,
        errant_own=(errant - (candidate.channel.retrieved_gtid_set or GtidSet.EMPTY)
                    if errant and candidate.other_channels_gtids is not None else None))


#: Reasons a candidate's verdict lists (the gravest first); the others are counted.
MAX_REASONS = 10


def _sort_key(c: CandidateAssessment) -> tuple:
    """Safe first, then safe after catch-up, undetermined, and the unsafe by what they cost:
    able to serve, fewer lost transactions, fewer refused siblings, fewer spread GTIDs; then the
    shorter relay log to apply, an undelayed one before a delayed one, and the fewer transactions
    in flight."""
    def n(s: GtidSet | None) -> int:
        return s.count() if s is not None else 0
    tier = 3 if c.verdict.unsafe else c.verdict.rank
    cost = c.cost
    log_replica_updates_off = any("log_replica_updates is OFF" in x for x in c.readiness)
    # the relay log still to apply (a delayed replica's backlog) before the transactions still in
    # flight: in_flight only measures how long before the source this candidate was read
    # the shorter relay log first; then an undelayed candidate before a delayed one (its delay is
    # kept for a reason; an unknown delay counts as one)
    return (tier, cost.cannot_serve, cost.lost, cost.refused, cost.spread, log_replica_updates_off,
            n(c.pending_relay), c.source_delay != 0, n(c.in_flight), c.candidate)


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

def quiet_sibling(s: SiblingOutcome) -> bool:
    """True when sibling ``s`` streams from the candidate and the promotion costs it nothing: no
    refusal, no note, nothing lost, thrown away or spread into it, no errant GTID of its own, and
    every one of those sets known. At most it waits for the candidate's catch-up or in-flight
    transactions, which the candidate's verdict (``safe_after_catch_up``) already says."""
    return (s.result is SiblingResult.STREAMS and not s.already_refused and not s.notes
            and all(v is not None and not v for v in (s.lost, s.discarded, s.errant, s.sibling_errant))
            # known, and may be non-empty: a candidate whose receiver state is unknown has an
            # unknown in-flight set, which may be a loss
            and all(v is not None for v in (s.in_flight, s.catch_up, s.sibling_set))
            # None there: no errant, a single-channel candidate, not refused
            and not s.errant_lost and not s.other_channels and not s.refused_missing
            and not s.needs_relay_log_applied)


def listed_siblings(c: CandidateAssessment) -> tuple[SiblingOutcome, ...]:
    """The siblings of candidate ``c`` that get a ``failover_readiness`` row: every sibling of the
    preferred candidate (rank 1: the promotion an operator would run), the source itself (so that
    each candidate has a row), and of the other candidates each sibling whose outcome is not quiet
    (:func:`quiet_sibling`). A source with R replicas then writes about 2R rows when its fleet is
    healthy, not R squared: 200 replicas were 40,000 rows, each repeating the candidate's and the
    sibling's gtid_executed (issue #19). The verdict, reasons and costs are computed from every
    sibling either way; ``siblings_not_listed`` on each row counts the quiet ones left out."""
    if c.rank == 1:
        return c.siblings
    return tuple(s for s in c.siblings if s.role == "source" or not quiet_sibling(s))


def failover_rows(model: FailoverModel, *, run_id: str | None = None, run_date: _dt.date | None = None,
                  cluster: str | None = None) -> list[dict[str, Any]]:
    """One row per (source, candidate, listed sibling: :func:`listed_siblings`), in the
    ``failover_readiness`` layout (schemas/failover.py): sets as canonical one-line text with
    their counts (None = unknown)."""
    rows = []
    for c in model.candidates:
        cost = c.cost
        listed = listed_siblings(c)
        not_listed = len(c.siblings) - len(listed)
        for s in listed:
            rows.append({
                "run_id": run_id, "run_date": run_date, "cluster": cluster,
                "source": model.source, "candidate": c.candidate, "channel": c.channel,
                "sibling": s.sibling, "sibling_role": s.role,
                "candidate_rank": c.rank, "verdict": c.verdict.value, "siblings_not_listed": not_listed,
                "verdict_reasons": "\n".join(c.reasons) or None,
                "candidate_readiness": "\n".join(c.readiness) or None,
                "cost_lost_count": cost.lost, "cost_refused_siblings": cost.refused,
                "cost_spread_count": cost.spread,
                "caused_by": "\n".join(f"{check} on {server}" for check, server in c.causes) or None,
                "sibling_result": s.result.value, "refusal": s.refusal, "reconnect_rule": s.rule or None,
                "already_refused_by_source": s.already_refused,
                "notes": "\n".join(s.notes) or None,
                "candidate_gtid_executed": _text(c.executed),
                "promoted_gtid_executed": _text(c.promoted_gtid_executed),
                "pending_relay_gtid_set": _text(c.pending_relay), "pending_relay_count": _count(c.pending_relay),
                "sibling_gtid_set": _text(s.sibling_set),
                "catch_up_gtid_set": _text(s.catch_up), "catch_up_count": _count(s.catch_up),
                "lost_gtid_set": _text(s.lost), "lost_count": _count(s.lost),
                "discarded_gtid_set": _text(s.discarded), "discarded_count": _count(s.discarded),
                "in_flight_gtid_set": _text(s.in_flight), "in_flight_count": _count(s.in_flight),
                "sibling_errant_gtid_set": _text(s.sibling_errant), "sibling_errant_count": _count(s.sibling_errant),
                "errant_gtid_set": _text(s.errant), "errant_count": _count(s.errant),
                "errant_salvageable_gtid_set": _text(s.errant_salvageable),
                "errant_salvageable_count": _count(s.errant_salvageable),
                "errant_lost_gtid_set": _text(s.errant_lost), "errant_lost_count": _count(s.errant_lost),
                "other_channels_gtid_set": _text(s.other_channels), "other_channels_count": _count(s.other_channels),
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
          "with AUTO_POSITION) would lose transactions a sibling has, spread errant or other-channel "
          "transactions, refuse a sibling, or is impossible (log_bin OFF, gtid_mode not ON). If the source "
          "fails now, every choice costs data or replicas; the finding names the least bad choice by what "
          "it costs (lost transactions first, then refused siblings, then spread GTIDs). Candidates whose "
          "state is unknown keep it silent; a candidate unsafe only by errant GTIDs the read order does not "
          "confirm makes it a warning, and so does a least bad choice that only spreads GTIDs (it loses no "
          "transaction and refuses no sibling); when every candidate's problem follows from other findings (a "
          "broken receiver or applier, errant transactions) it is info and names them.",
          "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS / ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER or silent loss at the "
          "failover",
          "Fix the findings it names first. Then make one candidate safe before it is needed: start stopped "
          "receivers so a replica catches up, fix a failed applier, apply to the best-ranked candidate the "
          "transactions only a sibling has, neutralise errant transactions with empty transactions on the "
          "source (or the top of its chain), from which they replicate; enable log_replica_updates "
          "(log_slave_updates before 8.0.26). The "
          "failover_readiness table ranks the "
          "candidates by cost and lists each set.", version=2),
    _info("failover_candidate_unsafe", Severity.WARNING, "pair",
          "Promoting this replica would lose, spread or refuse transactions",
          "Promoting this replica of its source and repointing the siblings (the source's other replicas, "
          "and the source itself should it come back) with AUTO_POSITION would: lose transactions a "
          "sibling has that this replica cannot obtain (its receiver is stopped or failing, its applier "
          "failed on an error, or the source purged them; a sibling's relay log is purged by the repoint), "
          "propagate errant transactions the source never executed (lost errant ones, purged from its "
          "binary logs, make it unpromotable), stream its other channels' transactions into the siblings, "
          "get a sibling refused (always, for a log_replica_updates=OFF replica with siblings), or fail "
          "because it cannot serve replicas. Lag at read time with a running receiver is not reported. "
          "Info, naming the cause, when every reason follows from another finding.",
          "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (13114 'purged required binary logs'), "
          "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER, or 13117 'equal MySQL server UUIDs' on the siblings",
          "Prefer a better-ranked candidate (failover_readiness). To make this one safe: fix the findings "
          "it names first, salvage the transactions only a sibling has by replicating them to it first, "
          "neutralise errant GTIDs with empty transactions on the source, from which they replicate to the "
          "siblings (each finding gives the SQL; never on this replica), fix log_replica_updates (log_slave_updates "
          "before 8.0.26) / log_bin / gtid_mode, give cloned servers their own server_uuid. A multi-source "
          "replica spreads what it applied from its other channels whatever is done with them: prefer "
          "another candidate.", version=2),
]})


def _finding(check_id: str, server: str, title: str, detail: str, *, source: str | None = None,
             channel: str | None = None, gtid_set: GtidSet | None = None, evidence: Mapping | None = None,
             remediation: str | None = None, severity: Severity | None = None) -> Finding:
    info = FAILOVER_CHECKS[check_id]
    return Finding(check_id=check_id, severity=severity or info.default_severity, server=server, source=source,
                   channel=channel, title=title, detail=detail, gtid_set=gtid_set,
                   gtid_count=_count(gtid_set) if gtid_set is not None else None,
                   evidence=dict(evidence or {}), check_version=info.version,
                   remediation=remediation if remediation is not None else info.remediation)


#: The default severity of each finding a failover reason can follow from (the registry in
#: gtid_core/checks/catalogue.py says the same; errant_transactions is critical only when the read
#: order confirms it, which is the only case a reason names it).
_CAUSE_SEVERITY = {
    "replication_receiver_error": Severity.CRITICAL,
    "replication_applier_error": Severity.CRITICAL,
    "replication_stopped": Severity.WARNING,
    "source_purged_required_gtids": Severity.CRITICAL,
    "errant_transactions": Severity.CRITICAL,
    "duplicate_server_uuid": Severity.CRITICAL,
    "gtid_mode_off": Severity.WARNING,
}


def _causes_text(causes: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{check} on {server}" for check, server in causes)


def _restates(causes: Sequence[tuple[str, str]], severity: Severity) -> bool:
    """True when some cause is a finding at least as severe as ``severity`` (the caller has checked
    that every reason has a cause): the readiness finding only restates them, and is recorded as
    info so that on-call sees one alarm per root cause. A root cause that is only a warning (a
    receiver stopped by hand) leaves a critical readiness finding critical, naming it."""
    order = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}
    return any(order[_CAUSE_SEVERITY.get(check, Severity.INFO)] >= order[severity] for check, _ in causes)


def _apply_relay_log(channel: str, delay: int | None, version: MySQLVersion | None, *, stop_receiver: bool,
                     backlog: GtidSet | None = None) -> str:
    """The statements that have a replica's applier apply its relay log, for its SOURCE_DELAY:
    named when known (a delayed applier waits SOURCE_DELAY seconds after each transaction's commit
    on its source, so it is set to 0 first), a conditional step when unknown, none when 0.

    The delay is changed while the receiver still runs (only the applier stopped): with both
    threads stopped, CHANGE REPLICATION SOURCE TO SOURCE_DELAY=0 purges the relay logs (observed on
    9.7.4, docs/failover.md "What the procedure taught"), and with them what was to be applied. A
    stopped receiver is started first: one that cannot reach its (failed) source keeps retrying,
    Replica_IO_Running = Connecting, a running thread. A sibling (``stop_receiver``: repointed
    next) is told to give its delay back in its repoint, or it would stay a replica without the
    delay it was kept for. The statements are in the words of the
    replica's ``version`` (gtid_core.syntax: STOP SLAVE, CHANGE MASTER TO MASTER_DELAY before 8.0.23).
    The applier is started (a stopped one without an error applies nothing otherwise; a running one
    is left as it is), and the wait ends when the server says ``backlog`` is applied (GTID_SUBSET
    against gtid_executed, which a multi-threaded applier's coordinator state does not prove)."""
    ch = f" FOR CHANNEL '{channel}'" if channel else ""
    running = (f"with its receiver running (if it is stopped, START REPLICA IO_THREAD{ch} first; one still trying to "
               "connect counts)")
    undelay = (f"STOP REPLICA SQL_THREAD{ch}; CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0{ch}; START REPLICA "
               f"SQL_THREAD{ch}")
    steps = []
    if not _changes_delay_with_receiver_running(version):
        # before 5.7.4 the CHANGE needs both threads stopped, and then deletes the relay log
        why = f"MySQL {version} changes it only with the receiver stopped too, and that CHANGE deletes the relay log"
        if delay:
            steps.append(f"its SOURCE_DELAY is {delay} s: leave it ({why}), and let the applier catch up as the delay "
                         f"passes (up to {delay} s after the last transaction's commit on its source)")
        elif delay is None:
            steps.append(f"if it has a SOURCE_DELAY, leave it ({why}) and let the delay pass")
        delay = 0                     # nothing to give back
    elif delay:
        steps.append(f"its SOURCE_DELAY is {delay} s, so first, {running}: {undelay}")
    elif delay is None:
        steps.append(f"if it has a SOURCE_DELAY, first, {running}: {undelay}")
    if stop_receiver:
        steps.append(f"STOP REPLICA IO_THREAD{ch}")
    if not delay:
        # a known delay's steps above ended by starting the applier: a second START only warns
        steps.append(f"START REPLICA SQL_THREAD{ch}")
    if backlog:
        steps.append(f"wait until SELECT GTID_SUBSET('{backlog.to_text(multiline=False)}', @@GLOBAL.gtid_executed) "
                     "returns 1 (its applier has applied the relay log)")
    else:
        steps.append("wait until its applier has applied the relay log (Replica_SQL_Running_State: 'Replica has read "
                     "all relay log')")
    if stop_receiver and delay:      # a sibling: repointed next, it keeps its protective delay
        steps.append(f"give its SOURCE_DELAY = {delay} back in the CHANGE REPLICATION SOURCE TO that repoints it")
    elif stop_receiver and delay is None:
        steps.append("if it had a SOURCE_DELAY, give it back in the CHANGE REPLICATION SOURCE TO that repoints it")
    return in_syntax_of("; then ".join(steps), version)


def _sibling_applies_relay_log(s: SiblingOutcome) -> str:
    """The steps that have sibling ``s`` apply its relay log before it is repointed (every step
    and reason that names a sibling's relay log uses these)."""
    return _apply_relay_log(s.channel, s.source_delay, s.version, stop_receiver=True, backlog=s.relay_backlog)


def _changes_delay_with_receiver_running(version: MySQLVersion | None) -> bool:
    """CHANGE MASTER TO MASTER_DELAY with only the applier stopped: from 5.7.4 (WL#6120, "Change
    master without stopping slave"); before, both threads must be stopped, and that CHANGE deletes
    the relay logs. True for an unknown version (today's servers)."""
    return version is None or version.triple >= (5, 7, 4)


def _names_text(names: Sequence[str]) -> str:
    """'a', 'a or b', 'a, b or c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _salvage_from_siblings(model: FailoverModel, c: CandidateAssessment) -> list[str]:
    """What candidate ``c`` must get from its siblings before it is promoted (every sibling's
    ``lost`` and ``discarded``): first the step that has each sibling holding some of it only in
    its relay log apply it, then one paragraph per part of it, naming every replica that can send
    that whole part from its binary logs (any one is enough; those not waiting on their applier
    first), parts chosen greedily, largest first; then what only S can still send (while it is
    up, through the candidate's own channel), then what no server can send any more.

    Soundness: a replica is named only for what its binary logs hold (:func:`_unserved`: not
    purged, logged at all); S's own ``lost`` is what it purged, so S is named only for the rest."""
    steps: list[str] = []
    for s in c.siblings:
        if s.discarded:
            steps.append(
                f"{s.sibling} holds, only in its relay log, {s.discarded.count()} transaction(s) {c.candidate} will "
                f"never get ({_short(s.discarded)}): have {s.sibling}'s applier apply them before repointing it "
                f"({_sibling_applies_relay_log(s)}).")
    wanted = GtidSet.EMPTY
    for s in c.siblings:
        wanted = wanted | s.offers
    if not wanted:
        return steps
    # (name, waits on its applier or would send errant GTIDs too, what it can send)
    holders = [(s.sibling, (bool(s.sibling_errant), bool(s.discarded)), s.offers - s.unserved)
               for s in c.siblings if s.role != "source" and s.unserved is not None]
    holders = [h for h in holders if h[2]]
    errant_of = {s.sibling: s.sibling_errant for s in c.siblings if s.sibling_errant}
    for_channel = f" FOR CHANNEL '{c.channel}'" if c.channel else ""
    source = next((s for s in c.siblings if s.role == "source"), None)
    from_source = (source.offers - source.unserved
                   if source is not None and source.unserved is not None else GtidSet.EMPTY)
    # what S purged and R lacks: R's reconnect to S is refused (ER_MASTER_HAS_PURGED_REQUIRED_GTIDS)
    # until R has it, so S's binary logs are no alternative before then
    refused_by_source = source.unserved if source is not None and source.unserved else GtidSet.EMPTY
    left = wanted
    while left:
        best = max(holders, key=lambda h: ((h[2] & left).count(), not any(h[1])), default=None)
        part = best[2] & left if best is not None else GtidSet.EMPTY
        if not part:
            break
        names = [n for n, _, has in sorted(holders, key=lambda h: h[1]) if not (part - has)]
        one, logs = (" (any one of them is enough)", "one of these servers'") if len(names) > 1 else ("", "its")
        errant = "".join(f" {n} would also send its errant GTIDs ({_short(errant_of[n])}): prefer another, or "
                         f"remove them first (errant_transactions on {n})." for n in names if n in errant_of)
        steps.append(in_syntax_of(   # the statements run on the candidate
            f"Salvage from {_names_text(names)}{one}: {part.count()} transaction(s) {c.candidate} will never get "
            f"({_short(part)}). Before promoting {c.candidate}, apply them to it from {logs} binary logs (e.g. "
            f"replicate {c.candidate} from {names[0]} with SOURCE_AUTO_POSITION=1 until SELECT "
            f"GTID_SUBSET('{part.to_text(multiline=False)}', @@GLOBAL.gtid_executed) returns 1 on {c.candidate})"
            + (f", or, while {model.source} is up, START REPLICA{for_channel} on {c.candidate}."
               if not (part - from_source) and not refused_by_source else ".") + errant, c.version))
        left = left - part
    if left:
        part = left & from_source
        if part:
            first = (f"once {c.candidate} has the {refused_by_source.count()} {model.source} purged (below: until "
                     f"then {model.source} refuses it, {ER_MASTER_HAS_PURGED_REQUIRED_GTIDS}), " if refused_by_source
                     else "")
            steps.append(in_syntax_of(   # the statements run on the candidate
                f"Only {model.source} can still send {part.count()} transaction(s) {c.candidate} lacks "
                f"({_short(part)}): {first}while {model.source} is up, have {c.candidate} fetch them (START "
                f"REPLICA{for_channel}, fix what stops its receiver) until SELECT GTID_SUBSET('"
                f"{part.to_text(multiline=False)}', @@GLOBAL.gtid_executed) returns 1 on {c.candidate}; if "
                f"{model.source} fails first, they are lost.", c.version))
            left = left - part
    if left:
        unknown = [s.sibling for s in c.siblings if s.unserved is None and left & s.offers]
        where = (f"{_names_text(unknown)} {'has' if len(unknown) == 1 else 'have'} them, but whether "
                 f"{'its' if len(unknown) == 1 else 'their'} binary logs still hold them was not read (log_bin, "
                 "log_replica_updates or gtid_purged unknown): check there; if no server can send them, " if unknown
                 else f"neither {model.source} nor its other replicas can send them from their binary logs "
                 "(purged, or not logged): get them from another server that still has them (such as the source "
                 f"of {model.source}, if it has one), or ")
        steps.append(
            f"{left.count()} transaction(s) {c.candidate} will never get ({_short(left)}): {where}reprovision "
            f"{c.candidate} (a clone of a server that has them); until then, do not promote it.")
    return steps


def _salvage_steps(model: FailoverModel, c: CandidateAssessment) -> list[str]:
    """What a DBA does to make candidate ``c`` safe, sibling by sibling, the root causes first."""
    steps: list[str] = []
    if c.causes:
        steps.append(f"Fix first: {_causes_text(c.causes)} (the findings this follows from).")
    steps.extend(_salvage_from_siblings(model, c))
    if c.pending_relay and c.verdict is not Verdict.SAFE:
        steps.append(f"Before promoting {c.candidate}, let it apply its relay log ({c.pending_relay.count()} "
                     f"transaction(s); the applier must be running and free of errors): "
                     f"{_apply_relay_log(c.channel, c.source_delay, c.version, stop_receiver=False, backlog=c.pending_relay)}.")
    if c.errant:
        replicas = [s.sibling for s in c.siblings if s.role != "source"]
        where = (f"{model.source} while it is up, from which they replicate to every sibling (those that have them "
                 "skip them)" + (f"; once it is gone, on {_all_of(replicas)} each" if replicas else ""))
        lost_part = (f" {c.errant_lost.count()} of them are purged from {c.candidate}'s binary logs (lost errant "
                     f"GTIDs): nobody can replay or inspect them; never promote it without neutralising them."
                     if c.errant_lost else "")
        own = c.errant_own or GtidSet.EMPTY
        brought = c.errant - own
        text = f"Errant transactions on {c.candidate}: {_short(c.errant)}.{lost_part}"
        if brought:
            text += (f" The {brought.count()} its channel from {model.source} brought: if their changes are wanted or "
                     "harmless, " if own else " If their changes are wanted or harmless, ")
            text += (f"commit empty transactions with these GTIDs on {where}; never on {c.candidate}:\n"
                     f"{empty_transaction_sql(brought)}")
        if own:
            text += (f"{chr(10) if brought else ' '}{own.count()} of them came through none of {c.candidate}'s "
                     f"channels ({_short(own)}): written on {c.candidate} itself, they belong to whichever "
                     f"cluster's data they changed. Its errant_transactions finding gives their SQL and the sources "
                     f"to run it on ({model.source} only if they belong to its data): one of them is enough; do not "
                     f"commit them on {model.source}'s other replicas as well.")
        steps.append(text)
    spread = GtidSet.EMPTY      # the other channels' GTIDs that would reach the siblings that stream
    for s in c.siblings:
        if s.result is not SiblingResult.REFUSED and s.other_channels:
            spread = spread | s.other_channels
    if spread:
        steps.append(f"{c.candidate} replicates from other sources too: the {spread.count()} GTID(s) it applied "
                     f"from them ({_short(spread)}) are in its gtid_executed and binary logs, and every sibling "
                     "repointed to it receives them; removing its other channels does not take them back, it only "
                     "stops more from coming. Promote it only if every sibling may receive that data; otherwise "
                     "prefer another candidate.")
    steps.extend(_drain_steps(c))
    for s in c.refused:
        if s.already_refused:
            continue
        if s.refusal in (EQUAL_SERVER_UUID, EQUAL_SERVER_ID):
            steps.append(f"{s.sibling} has {c.candidate}'s identity ({s.rule}): stop the clone, delete its "
                         "auto.cnf (new server_uuid) or give it its own server_id, restart it.")
        elif s.refusal == ER_MASTER_HAS_PURGED_REQUIRED_GTIDS and s.refused_missing:
            text = (f"{s.sibling} lacks {s.refused_missing.count()} transaction(s) {c.candidate} no longer has in its "
                    f"binary logs ({_short(s.refused_missing)}): ")
            beyond = _minus(s.relay_backlog, c.promoted_gtid_executed)
            holds_them = s.relay_backlog is not None and s.refused_missing <= s.relay_backlog
            if holds_them and beyond is not None and not beyond:
                text += (f"{s.sibling} holds them in its relay log, which the repoint would throw away: have its "
                         f"applier apply them before repointing it "
                         f"({_sibling_applies_relay_log(s)}).")
            elif holds_them:
                # applying the relay log would also give the sibling what the candidate may never have
                what = f"{beyond.count()} transaction(s) ({_short(beyond)})" if beyond else "transactions"
                text += (f"{s.sibling} holds them in its relay log, but also {what} {c.candidate} was not known to "
                         f"have when read: applied before the repoint, those would be on {s.sibling} and not on "
                         f"{c.candidate}, a silent divergence. Have {c.candidate} get them first (its receiver "
                         f"running while {model.source} is up), then apply {s.sibling}'s relay log before repointing "
                         f"it ({_sibling_applies_relay_log(s)}); or prefer another candidate.")
            else:
                text += (f"let {s.sibling} catch up from {model.source} while {model.source} is up (its receiver "
                         f"running), or plan to reprovision it from {c.candidate} after the promotion.")
            steps.append(text)
        elif s.refusal == ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER and s.refused_missing:
            steps.append(f"{s.sibling} has transactions of {c.candidate}'s own uuid that {c.candidate} lacks "
                         f"({_short(s.refused_missing)}): find out where they come from before promoting.")
        elif s.refusal in (NO_BINARY_LOG, GTID_MODE_NOT_ON):
            steps.append(f"{c.candidate} cannot serve replicas ({s.refusal}): enable it (restart needed) or never "
                         "promote it.")
            break
    return steps


def _candidate_evidence(model: FailoverModel, c: CandidateAssessment) -> dict[str, Any]:
    cost = c.cost
    return {
        "verdict": c.verdict.value, "rank": c.rank, "ranking": model.ranking_text(),
        "reasons": "\n".join(c.reasons), "readiness": "\n".join(c.readiness),
        "cost": cost.text(), "cost_lost": cost.lost, "cost_refused_siblings": cost.refused,
        "cost_spread": cost.spread, "caused_by": _causes_text(c.causes) or None,
        "candidate_gtid_executed": _text(c.executed), "pending_relay": _text(c.pending_relay),
        "lost": _text(c.lost), "errant": _text(c.errant), "errant_salvageable": _text(c.errant_salvageable),
        "errant_lost": _text(c.errant_lost),
        "refused_siblings": "; ".join(f"{s.sibling}: {s.refusal}" for s in c.refused) or None,
        "siblings": _siblings_text(c),
        "model_version": FAILOVER_MODEL_VERSION,
    }


def _siblings_text(c: CandidateAssessment) -> str:
    """One line per sibling of candidate ``c``, the first MAX_REASONS of them (those with
    something to say first), then how many more and where they are: each listed sibling's
    failover_readiness row has its sets (:func:`listed_siblings`), the quiet ones are counted."""
    siblings = c.siblings
    def line(s: SiblingOutcome) -> str:
        return (f"{s.sibling} ({s.role}): {s.result}"
                + (f", lost {_text(s.lost)}" if s.lost else "")
                + (f", discards {_text(s.discarded)}" if s.discarded else "")
                + (f", errant {_text(s.errant)}" if s.errant else "")
                + (f", other channels {_text(s.other_channels)}" if s.other_channels else "")
                + (f", refused {s.refusal}" if s.refusal else "")
                + (f" once it has applied its relay log (repointed before, it lacks {_text(s.needs_relay_log_applied)})"
                   if s.needs_relay_log_applied else "")
                + (" (already refused by the source)" if s.already_refused else ""))
    if len(siblings) <= MAX_REASONS:
        return "\n".join(map(line, siblings))
    def plain(s: SiblingOutcome) -> bool:
        return s.result is SiblingResult.STREAMS and not (s.lost or s.discarded or s.errant or s.other_channels
                                                          or s.refusal or s.needs_relay_log_applied)
    shown = ([s for s in siblings if not plain(s)] + [s for s in siblings if plain(s)])[:MAX_REASONS]
    listed = {s.sibling for s in listed_siblings(c)}
    shown_names = {s.sibling for s in shown}
    left = [s for s in siblings if s.sibling not in shown_names]
    unlisted = sum(1 for s in left if s.sibling not in listed)
    where = ("each in failover_readiness" if not unlisted
             else "that stream, losing nothing (siblings_not_listed in failover_readiness)" if unlisted == len(left)
             else f"{len(left) - unlisted} in failover_readiness, {unlisted} that stream, losing nothing")
    return "\n".join([*map(line, shown), f"and {len(left)} more sibling(s), {where}"])


def _drain_steps(c: CandidateAssessment) -> list[str]:
    """One step per sibling that must apply its relay log before it is repointed to ``c``
    (``needs_relay_log_applied``): otherwise the repoint purges that relay log and ``c``, which
    purged those transactions from its binary logs, refuses the sibling."""
    return [f"{s.sibling} lacks {s.needs_relay_log_applied.count()} transaction(s) {c.candidate} no longer has in its "
            f"binary logs ({_short(s.needs_relay_log_applied)}) and holds them in its relay log, which the repoint "
            f"would throw away: have its applier apply them before repointing it "
            f"({_drain_condition(c.candidate, c.source, s)}{_sibling_applies_relay_log(s)})."
            for s in c.siblings if s.needs_relay_log_applied]


def _drain_condition(candidate: str, source: str, s: SiblingOutcome) -> str:
    """What must hold before sibling ``s`` applies its relay log for ``candidate``, when that
    relay log holds what the candidate's receiver was still fetching when read (``in_flight``,
    v4): the candidate has applied it. Applied on the sibling while the candidate lacks them, with
    the source down, they would be transactions the sibling has and the candidate never gets;
    empty when nothing of the relay log was in flight."""
    gate = (s.in_flight & s.relay_backlog) if s.in_flight is not None and s.relay_backlog is not None else None
    if not gate:
        return ""
    text = _short(gate, 120)
    return (f"first wait until {candidate} has applied the {gate.count()} transaction(s) of {s.sibling}'s relay log "
            f"it lacked when read (its receiver was running): SELECT GTID_SUBSET('{gate.to_text(multiline=False)}', "
            f"@@GLOBAL.gtid_executed) returns 1 on {candidate}; should {source} be down before then, {candidate} "
            f"never gets them ({text}): do not repoint {s.sibling} to {candidate} after applying them, promote "
            f"another candidate ({s.sibling} holds them) or salvage them into {candidate} from {s.sibling}; then ")


def _advice_drains(model: FailoverModel) -> list[SiblingOutcome]:
    """The siblings whose relay-log steps the advice gives (:func:`_advice`): those that must apply
    their relay logs before the repoint to a safe_after_catch_up first candidate; else none."""
    best = model.candidates[0]
    if best.verdict is not Verdict.SAFE_AFTER_CATCH_UP:
        return []
    return [s for s in best.siblings if s.needs_relay_log_applied]


def _advice(model: FailoverModel) -> str:
    """Which replica to promote and what it costs, for every finding of this source."""
    best = model.candidates[0]
    drains = _advice_drains(model)
    if drains:
        names = _all_of([s.sibling for s in drains])
        steps = _apply_relay_log(best.channel, best.source_delay, best.version, stop_receiver=False,
                                 backlog=best.pending_relay)
        own = f" once it has applied its relay log ({steps}), and" if best.pending_relay else ""
        return (f"If {model.source} fails, promote {best.candidate} ({best.verdict}){own} once {names} "
                f"{'has' if len(drains) == 1 else 'have'} applied {'its' if len(drains) == 1 else 'their'} relay "
                f"log{'s' if len(drains) > 1 else ''} before being repointed: " + " ".join(_drain_steps(best)))
    if best.verdict is Verdict.SAFE_AFTER_CATCH_UP and best.source_delay and best.pending_relay:
        if not _changes_delay_with_receiver_running(best.version):
            return in_syntax_of(
                f"If {model.source} fails, promote {best.candidate} ({best.verdict}) once it has applied its relay "
                f"log: its SOURCE_DELAY of {best.source_delay} s must pass first (MySQL {best.version} changes it only "
                "with the receiver stopped too, and that CHANGE deletes the relay log).", best.version)
        return in_syntax_of(
            f"If {model.source} fails, promote {best.candidate} ({best.verdict}) once it has applied its relay "
            f"log: its SOURCE_DELAY of {best.source_delay} s must be set to 0 first, with its receiver running "
            "(STOP REPLICA SQL_THREAD, CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0, START REPLICA SQL_THREAD; "
            "with both threads stopped the CHANGE discards the relay log).", best.version)
    if best.verdict in (Verdict.SAFE, Verdict.SAFE_AFTER_CATCH_UP):
        return f"If {model.source} fails, promote {best.candidate} ({best.verdict})."
    if best.verdict is Verdict.UNDETERMINED:
        return f"If {model.source} fails, {best.candidate} ranks first, but its outcome is undetermined."
    return (f"If {model.source} fails now, the least bad choice is {best.candidate}: it "
            f"{best.cost.text()} ({best.verdict}).")


def failover_findings(model: FailoverModel) -> list[Finding]:
    """``failover_candidate_unsafe`` per candidate known to be unsafe, and
    ``no_safe_failover_candidate`` when every candidate is (an undetermined one keeps it silent).

    The findings' ``gtid_set`` is what is at stake: the lost transactions, else the errant ones, else
    what a refused sibling lacks. Texts say which replica to promote, what each choice costs and
    what to fix first. Root cause first: a finding whose every reason follows from another finding
    at least as severe (a receiver error, errant transactions, ...) names it in ``caused_by`` and is
    recorded at severity info, so that on-call sees one alarm per cause.
    """
    out: list[Finding] = []
    advice = _advice(model)
    # the advice gives the steps a safe_after_catch_up choice needs: the ranking under it does not repeat them
    told = bool(_advice_drains(model))
    for c in model.candidates:
        if not c.verdict.unsafe:
            continue
        at_stake = c.lost or c.errant \
            or next((s.refused_missing for s in c.refused if s.refused_missing), None) or c.spread or None
        steps = _salvage_steps(model, c)
        remediation = (f"{model.ranking_sentence(first_told=told)}\n"
                       + ("\n".join(steps) if steps else FAILOVER_CHECKS["failover_candidate_unsafe"].remediation))
        derived = c.derived and _restates(c.causes, Severity.WARNING)
        follows = (f" This follows from {_causes_text(c.causes)}: fix {'that' if len(c.causes) == 1 else 'those'} "
                   "first.") if c.causes else ""
        evidence = _candidate_evidence(model, c)
        if c.unconfirmed:
            evidence["unconfirmed"] = f"{c.candidate} was not read before {model.source}"
        out.append(_finding(
            "failover_candidate_unsafe", c.candidate,
            ("Unconfirmed: " if c.unconfirmed else "")
            + f"Promoting {c.candidate} (replica of {model.source}): {c.verdict}, {c.cost.text()}",
            f"If {model.source} fails and {c.candidate} is promoted, with the other replicas and {model.source} "
            f"repointed to it with AUTO_POSITION: " + "; ".join(c.reasons) + f". {advice}{follows}",
            source=model.source, channel=c.channel, gtid_set=at_stake or None,
            evidence=evidence, remediation=remediation, severity=Severity.INFO if derived else None))
    if model.no_safe_candidate:
        best = model.candidates[0]
        steps = _salvage_steps(model, best)
        lost = GtidSet.EMPTY
        causes: list[tuple[str, str]] = []
        for c in model.candidates:
            lost = lost | c.lost
            causes.extend(x for x in c.causes if x not in causes)
        derived = all(c.derived for c in model.candidates) and _restates(causes, Severity.CRITICAL)
        unconfirmed = [c.candidate for c in model.candidates if c.unconfirmed]
        # a least bad choice that loses no transaction and refuses no replica only spreads GTIDs
        # (a multi-source candidate): it costs neither data nor replicas, a warning, not a page
        spread_only = not (best.cost.cannot_serve or best.cost.lost or best.cost.refused)
        severity = Severity.INFO if derived else Severity.WARNING if unconfirmed or spread_only else None
        follows = (f" Every candidate's problem follows from other findings ({_causes_text(causes)}): fix those "
                   "first." if derived else (f" Fix first: {_causes_text(causes)}." if causes else ""))
        out.append(_finding(
            "no_safe_failover_candidate", model.source,
            ("Unconfirmed: " if unconfirmed and not derived else "")
            + f"{model.source}: none of its {len(model.candidates)} replica(s) can be promoted safely",
            f"Every replica of {model.source} is unsafe to promote: "
            + "; ".join(f"{c.candidate}: {c.verdict}, {c.cost.text()} ({c.reasons[0] if c.reasons else '-'})"
                        for c in model.candidates)
            + f". {advice}{follows}"
            + (f" UNCONFIRMED: {', '.join(unconfirmed)} not read before {model.source}; the errant GTIDs may be "
               f"{model.source}'s own commits made between the reads." if unconfirmed and not derived else ""),
            gtid_set=lost or None,
            evidence={"ranking": model.ranking_text(), "candidates": len(model.candidates),
                      "verdicts": ", ".join(f"{c.candidate}={c.verdict}" for c in model.candidates),
                      "least_bad": best.candidate, "least_bad_cost": best.cost.text(),
                      "caused_by": _causes_text(causes) or None,
                      "unconfirmed": ", ".join(unconfirmed) or None,
                      "model_version": FAILOVER_MODEL_VERSION},
            severity=severity,
            remediation=(f"{model.ranking_sentence()}\nTo make {best.candidate} safe:\n"
                         + "\n".join(steps)) if steps else None))
    return out
