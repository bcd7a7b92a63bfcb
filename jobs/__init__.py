"""The I/O edge of gtid-audit: configuration, MySQL reads, Spark, Delta tables, alerting, CLI.

Everything that knows about a connection, a file or a Spark session lives here; the logic it
feeds lives in the pure ``gtid_core`` package.
"""
