"""A real local MySQL 9.7 fleet: installer, servers, topologies, fault scenarios.

Submodules: ``installer`` (ensure_mysql), ``server`` (SandboxServer), ``fleet`` (Topology,
Fleet), ``scenarios`` (fault injectors returning server-computed GTID sets), ``cli``.
"""
