"""Grading settings: how lenient the math grader is, per task or dataset.

Public grader suites disagree on a few conventions; :class:`GradingSettings`
names them so a dataset can say which it follows:

* ``precision``: decimal places numbers are rounded to before math-verify
  compares them (math-verify's ``float_rounding``). A decimal answer must in
  any case agree with the exact value to half a unit in its last written place
  (see :mod:`flexmg.envs.math.strict`).
* ``set_relations``: also accept a relation for an interval gold
  (``-2 \\le x \\le 7`` for ``x \\in [-2, 7]``). An interval answer for a
  relation gold is always compared as a set.
* ``strict_variables``: variables must match by name (``f(x)`` is not
  ``f(y)``); False compares up to renaming, as some suites do.
* ``units``: ``"strip"`` allows a unit after the value, in words or
  ``\\text{}`` (``18 dollars``, ``5\\text{ cm}``); ``"keep"`` allows none
  (a procedural task asks for a bare number). Hedges, alternatives and other
  words are never allowed (see :mod:`flexmg.envs.math.reading`).
* ``percent``: ``"sign"`` reads ``x\\%`` as ``x`` (the sign is a unit mark:
  ``25\\%`` equals 25, not 0.25); ``"fraction"`` reads it as ``x/100``
  (``25\\%`` equals 0.25 and ``\\frac14``, not 25). Either way an answer has
  one value, never both.
* ``float_tolerance``: the relative error allowed to a decimal answer written
  with at least 12 significant digits (a machine float's ``repr``, such as
  ``0.30000000000000004``) against an exact gold.

Loaders attach their default (:data:`DATASET_DEFAULTS`) to each task's
``meta["grading"]``; :func:`settings_for_task` reads it back.

Example:
    >>> s = GradingSettings(precision=2, units="keep")
    >>> s.validate() is s, GradingSettings.from_mapping(s.to_dict()) == s
    (True, True)
    >>> GradingSettings(units="drop").validate()
    Traceback (most recent call last):
    ...
    ValueError: GradingSettings.units must be one of ('strip', 'keep'), got 'drop'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol

# (precision, set_relations, strict_variables, units, percent, float_tolerance)
SettingsKey = tuple[int, bool, bool, str, str, float]

UNITS_POLICIES = ("strip", "keep")
PERCENT_POLICIES = ("sign", "fraction")
MAX_PRECISION = 30
MAX_FLOAT_TOLERANCE = 1e-3


class HasMeta(Protocol):
    """Anything with a ``meta`` mapping, such as :class:`flexmg.tasks.Task`."""

    @property
    def meta(self) -> Mapping[str, Any]:
        """The object's metadata (read-only is enough)."""
        ...


@dataclass(frozen=True)
class GradingSettings:
    """The conventions one task or dataset is graded by (see the module docstring)."""

    precision: int = 6
    set_relations: bool = False
    strict_variables: bool = True
    units: str = "strip"
    percent: str = "sign"
    float_tolerance: float = 1e-9

    def validate(self) -> GradingSettings:
        """Return ``self`` if every field is usable, else raise ValueError saying which."""
        if isinstance(self.precision, bool) or not isinstance(self.precision, int):
            raise ValueError(
                f"GradingSettings.precision must be an int number of decimal places "
                f"(0..{MAX_PRECISION}), got {self.precision!r}"
            )
        if not 0 <= self.precision <= MAX_PRECISION:
            raise ValueError(
                f"GradingSettings.precision must be within 0..{MAX_PRECISION} decimal places, "
                f"got {self.precision}"
            )
        for name in ("set_relations", "strict_variables"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(
                    f"GradingSettings.{name} must be True or False, got {getattr(self, name)!r}"
                )
        if self.units not in UNITS_POLICIES:
            raise ValueError(
                f"GradingSettings.units must be one of {UNITS_POLICIES}, got {self.units!r}"
            )
        if self.percent not in PERCENT_POLICIES:
            raise ValueError(
                f"GradingSettings.percent must be one of {PERCENT_POLICIES}, got {self.percent!r}"
            )
        tolerance = self.float_tolerance
        if (
            isinstance(tolerance, bool)
            or not isinstance(tolerance, (int, float))
            or not 0 <= tolerance <= MAX_FLOAT_TOLERANCE
        ):
            raise ValueError(
                f"GradingSettings.float_tolerance must be a relative error in "
                f"0..{MAX_FLOAT_TOLERANCE} (e.g. 1e-9), got {tolerance!r}"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what loaders store in ``Task.meta["grading"]``)."""
        return asdict(self)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> GradingSettings:
        """Build and validate from a dict; unknown keys are an error naming the known ones.

        >>> GradingSettings.from_mapping({"precision": 4}).precision
        4
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"grading settings must be a mapping, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"unknown grading setting(s) {unknown}; known settings: {sorted(known)}"
            )
        return cls(**dict(data)).validate()

    def key(self) -> SettingsKey:
        """A hashable form, used in verdict caches and sent to the grading workers."""
        return (
            self.precision,
            self.set_relations,
            self.strict_variables,
            self.units,
            self.percent,
            float(self.float_tolerance),
        )


DEFAULT = GradingSettings()

# Per-dataset defaults, keyed by the loaders' ``meta["format"]`` (procedural
# tasks from the generators have none and use ``"procedural"``).
DATASET_DEFAULTS: dict[str, GradingSettings] = {
    # GSM8K: integer answers, often with a currency or a unit word after them.
    "gsm8k": GradingSettings(units="strip"),
    # MATH / MATH-500: intervals may be answered as inequalities; \text{} units dropped.
    "math": GradingSettings(set_relations=True, units="strip"),
    "plain": GradingSettings(),
    # Generated tasks ask for a bare number or expression: graded as written.
    "procedural": GradingSettings(units="keep"),
}


def coerce_settings(settings: GradingSettings | Mapping[str, Any] | None) -> GradingSettings:
    """``None`` -> the default; a mapping -> :meth:`GradingSettings.from_mapping`.

    >>> coerce_settings(None) == DEFAULT, coerce_settings({"units": "keep"}).units
    (True, 'keep')
    """
    if settings is None:
        return DEFAULT
    if isinstance(settings, GradingSettings):
        return settings.validate()
    if isinstance(settings, Mapping):
        return GradingSettings.from_mapping(settings)
    raise TypeError(
        "settings must be a GradingSettings, a dict of its fields or None, "
        f"got {type(settings).__name__}"
    )


def settings_for_task(task: HasMeta) -> GradingSettings:
    """The settings a task is graded by: ``meta["grading"]``, else its format's default.

    >>> from flexmg.tasks import Task
    >>> settings_for_task(Task(id="t", prompt="1+1?", answer="2", meta={"format": "math"}))
    GradingSettings(precision=6, set_relations=True, strict_variables=True, units='strip', percent='sign', float_tolerance=1e-09)
    """
    meta = getattr(task, "meta", None) or {}
    if meta.get("grading") is not None:
        return coerce_settings(meta["grading"])
    return DATASET_DEFAULTS.get(str(meta.get("format", "procedural")), DEFAULT)
