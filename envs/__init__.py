"""The env families of flexmg and what they are built from.

``flexmg.envs.families`` holds one module per env family (``math``, ``code``,
the didactic ``relay``): prompts, reward, roles, ids and version history.
``flexmg.envs.math`` and ``flexmg.envs.code`` hold the task sources
(generators, dataset loaders) and the verifiers (the boxed-answer grader, the
sandboxed test runner) the families use.

Example:
    >>> from flexmg.envs.families import FAMILY_MODULES
    >>> [name.rsplit(".", 1)[-1] for name in FAMILY_MODULES]
    ['math', 'code', 'relay', 'split', 'check', 'testfirst']
"""
