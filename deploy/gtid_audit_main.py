"""spark-submit entry file: ``spark-submit ... deploy/gtid_audit_main.py run --config FILE``.

spark-submit needs a Python file as the application; this one hands its arguments to the same
``gtid-audit`` command a shell would run, so a cluster run and a laptop run behave alike. The
SparkSession the job builds picks up everything spark-submit configured (master, --packages,
--conf), and uses delta-spark's writer when Delta's jars are on the classpath.
"""
import sys

from jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
