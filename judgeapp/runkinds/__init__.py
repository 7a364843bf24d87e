"""One handler per run kind: what units a run has, how one is judged, and what the report says.

The run machinery (services/runs.py) is the same for every kind; a kind only plans, executes and
finalizes. Handlers register themselves on import.
"""

from .base import RunFailed, RunHandler, UnitResult, UnitSpec, Verdict, handler_for, register

# Importing a kind's module registers its handler.
from . import pointwise  # noqa: E402,F401
from . import agent  # noqa: E402,F401
from . import pairwise  # noqa: E402,F401
from . import jury  # noqa: E402,F401

__all__ = ["RunFailed", "RunHandler", "UnitResult", "UnitSpec", "Verdict", "handler_for", "register"]
from . import blind  # noqa: E402,F401
from . import ranker  # noqa: E402,F401
