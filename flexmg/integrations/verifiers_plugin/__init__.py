"""The verifiers plugin module ``flexmg_verifiers`` (taskset/env id ``flexmg-verifiers``).

verifiers finds a taskset by importing the installed module its id names and taking
the one ``Taskset`` (and ``Env``) subclass in ``__all__``; the flexmg package maps
this folder to the top-level name ``flexmg_verifiers`` for that lookup. The code lives
in :mod:`flexmg.integrations.verifiers`.
"""

from flexmg.integrations.verifiers import FlexMGSeatsEnv, FlexMGTaskset

__all__ = ["FlexMGSeatsEnv", "FlexMGTaskset"]
