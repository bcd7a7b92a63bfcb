#!/usr/bin/env bash
# Run the nightly gtid-audit job on a Spark cluster.
#
#   deploy/submit.sh CONFIG [extra gtid-audit run options, e.g. --fail-on warning --run-id ID]
#
# CONFIG is shipped with --files and the job finds it by its file name (deploy/gtid_audit_main.py),
# so the same command works in client and cluster mode. Delta's jars go with --jars; the Python packages
# with --py-files. What spark-submit does not get here comes from your cluster's
# $SPARK_CONF_DIR/spark-defaults.conf (event log, executor memory, spark.executorEnv.*).
#
# Environment (all optional):
#   SPARK_SUBMIT      the spark-submit to run                  (default: spark-submit on PATH)
#   SPARK_MASTER      cluster manager URL                      (default: yarn)
#   DEPLOY_MODE       client | cluster                          (default: client: the alert feed
#                                                              and the exit code come back here)
#   PYTHON            a Python with gtid-audit installed on this host, used to find the Delta
#                     jars `make jars` cached                   (default: python3)
#   DELTA_JARS        comma-separated Delta jars for --jars     (default: `$PYTHON -m
#                     jobs.delta_jars show --csv`, i.e. io.delta:delta-spark_4.2_2.13:4.4.0 and
#                     its dependencies, resolved for the installed pyspark/delta-spark)
#   DELTA_PACKAGES    instead of DELTA_JARS: a Maven coordinate for --packages, resolved by
#                     spark-submit from your mirror (e.g. io.delta:delta-spark_4.2_2.13:4.4.0)
#   PYFILES_ZIP       zip of gtid_core/, schemas/, jobs/ built by `make dist`
#                                                              (default: dist/gtid_audit-pyfiles.zip)
#   PYSPARK_PYTHON    the executors' Python: it needs mysql-connector-python and the packages of
#                     the zip's imports (docs/deployment.md "Executors")
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 1 ] || { sed -n '2,29p' "$0"; exit 1; }
config="$1"; shift
: "${SPARK_SUBMIT:=spark-submit}"
: "${SPARK_MASTER:=yarn}"
: "${DEPLOY_MODE:=client}"
: "${PYTHON:=python3}"
: "${PYFILES_ZIP:=$here/../dist/gtid_audit-pyfiles.zip}"
[ -f "$PYFILES_ZIP" ] || { echo "submit.sh: $PYFILES_ZIP not found: run 'make dist' first" >&2; exit 1; }
[ -f "$config" ] || { echo "submit.sh: config file '$config' not found" >&2; exit 1; }

if [ -n "${DELTA_PACKAGES:-}" ]; then
  delta=(--packages "$DELTA_PACKAGES")
else
  if [ -z "${DELTA_JARS:-}" ]; then
    # fails with the exact install command when the jars are not cached
    DELTA_JARS="$("$PYTHON" -m jobs.delta_jars show --csv)"
  fi
  delta=(--jars "$DELTA_JARS")
fi

# Task retries (spark.task.maxFailures=4, Spark's default): a read task that fails (its executor
# lost, a crash in its Python worker) runs again and reads again only the servers of that task,
# which had not completed; a read task that completed is never repeated, even when its executor
# is lost later, because the task itself wrote what it read to the warehouse's staging table and
# the snapshot tables are derived from there (docs/collection.md, "Write"). No speculation: a
# read task must not run twice at once.
exec "$SPARK_SUBMIT" \
  --master "$SPARK_MASTER" \
  --deploy-mode "$DEPLOY_MODE" \
  --name gtid-audit-nightly \
  "${delta[@]}" \
  --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \
  --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
  --conf spark.sql.execution.arrow.pyspark.enabled=true \
  --conf spark.sql.session.timeZone=UTC \
  --conf spark.task.maxFailures=4 \
  --conf spark.speculation=false \
  --files "$config" \
  --py-files "$PYFILES_ZIP" \
  "$here/gtid_audit_main.py" run --config "$(basename "$config")" "$@"
