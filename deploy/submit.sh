#!/usr/bin/env bash
# Run the nightly gtid-audit job on a Spark cluster.
#
#   deploy/submit.sh CONFIG [extra gtid-audit run options, e.g. --fail-on warning]
#
# Environment (all optional):
#   SPARK_MASTER      cluster manager URL            (default: yarn)
#   DEPLOY_MODE       client | cluster                (default: client: the alert feed and
#                                                     exit code come back to the scheduler)
#   DELTA_VERSION     io.delta:delta-spark_2.13 version matching your Spark (default 4.4.1,
#                     built for Spark 4.2; see https://docs.delta.io/ "compatibility")
#   PYFILES_ZIP       zip of gtid_core/, schemas/, jobs/ built by `make dist`
#                     (default: dist/gtid_audit-pyfiles.zip)
#   PYSPARK_PYTHON    the executors' Python; it needs mysql-connector-python, pydantic,
#                     pyyaml and tenacity (install the wheel from `make dist` into that
#                     environment, or ship a packed venv with --archives, see docs/deployment.md)
#
# With --packages, Delta's jars come from your Maven mirror and the job writes the Delta tables
# with delta-spark (spark.read.format("delta") / replaceWhere). Without them it falls back to
# delta-rs from the driver, which writes identical tables.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
config="$1"; shift
: "${SPARK_MASTER:=yarn}"
: "${DEPLOY_MODE:=client}"
: "${DELTA_VERSION:=4.4.1}"
: "${PYFILES_ZIP:=$here/../dist/gtid_audit-pyfiles.zip}"
[ -f "$PYFILES_ZIP" ] || { echo "submit.sh: $PYFILES_ZIP not found: run 'make dist' first" >&2; exit 2; }
[ -f "$config" ] || { echo "submit.sh: config file '$config' not found" >&2; exit 2; }

exec spark-submit \
  --master "$SPARK_MASTER" \
  --deploy-mode "$DEPLOY_MODE" \
  --name gtid-audit-nightly \
  --packages "io.delta:delta-spark_2.13:${DELTA_VERSION}" \
  --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \
  --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
  --conf spark.sql.execution.arrow.pyspark.enabled=true \
  --conf spark.sql.session.timeZone=UTC \
  --conf spark.task.maxFailures=1 \
  --conf spark.speculation=false \
  --files "$config" \
  --py-files "$PYFILES_ZIP" \
  "$here/gtid_audit_main.py" run --config "$config" "$@"
