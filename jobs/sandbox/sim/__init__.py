"""A simulated MySQL fleet over the real wire protocol (issue #12).

``model`` builds clusters with coherent GTID state, faults and their truth; ``dialects`` says what
each version (5.6 to 9.x) answers; ``server`` serves every simulated server on its own loopback
address with mysql-mimic, in one or more processes that stop by themselves. docs/simulator.md
describes it and the evaluation of mysql-mimic.
"""
from jobs.sandbox.sim.model import SimFleet, FleetBuilder, Truth, generate  # noqa: F401
from jobs.sandbox.sim.server import Latency, Simulator  # noqa: F401
