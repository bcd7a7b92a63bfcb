"""``python -m jobs.sandbox.sim``: one simulator process (see :func:`jobs.sandbox.sim.server.main`)."""
import sys

from jobs.sandbox.sim.server import main

sys.exit(main())
