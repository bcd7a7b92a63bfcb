#!/usr/bin/env bash
# The cron entry's command (deploy/cron/gtid-audit.cron): runs deploy/submit.sh and turns its
# exit code into what cron should report. cron mails whatever a job writes to stdout/stderr to
# MAILTO, and ignores the exit code, so:
#   0      no open finding at or above --fail-on      logged; silent; exit 0
#   2      open findings: on-call gets them through    logged; silent; exit 0 (not a failed job)
#          the alert feed and Alertmanager
#   other  the job failed (1), or was killed (>128)    logged; one line and the log's tail on
#                                                      stderr (mailed); exit with that code
#
#   deploy/cron/nightly.sh CONFIG [gtid-audit run options]
#
# Environment: GTID_AUDIT_LOG (default /var/log/gtid-audit/nightly.log); SUBMIT (default the
# submit.sh beside this directory); everything submit.sh reads (SPARK_MASTER, PYTHON, ...).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
log="${GTID_AUDIT_LOG:-/var/log/gtid-audit/nightly.log}"
submit="${SUBMIT:-$here/../submit.sh}"
stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }

echo "$(stamp) gtid-audit nightly: start: $submit $*" >> "$log" || exit 1
"$submit" "$@" >> "$log" 2>&1
rc=$?
case "$rc" in
  0) echo "$(stamp) gtid-audit nightly: exit 0: no open findings at or above --fail-on" >> "$log"; exit 0 ;;
  2) echo "$(stamp) gtid-audit nightly: exit 2: open findings (sent to the alert feed)" >> "$log"; exit 0 ;;
  *) msg="$(stamp) gtid-audit nightly FAILED: exit code $rc (log: $log)"
     echo "$msg" >> "$log"
     { echo "$msg"; tail -n 20 "$log"; } >&2
     exit "$rc" ;;
esac
