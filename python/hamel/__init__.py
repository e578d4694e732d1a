"""hamel: structure-preserving integrators for constrained mechanical systems.

Load a model file, run a scheme, get NumPy arrays::

    import hamel
    model = hamel.Model("models/spherical_pendulum.hamel")
    run = model.simulate("hamel_averaged", h=0.2, steps=10_000, init="published")
    run.t, run.q, run.v, run.invariants["energy"], run.summary

Rust runs with the GIL released; ``Model.simulate_many`` runs an ensemble on
every core. The schemes and what each conserves are described in the
repository's ``docs/schemes.md``.
"""

import functools
import re

from ._hamel import (
    HamelError,
    Model,
    ModelError,
    Run,
    SchemeError,
    StepError,
    Stepper,
    __version__,
    dlqr,
    tangent_basis,
)


def _naming_the_argument(f):
    """Wraps a native function so that a wrong argument type names the argument.

    The native layer (PyO3) says only "must be real number, not str" and
    attaches the argument's name as a note ("while processing 'h'"); the
    message raised here starts with it: "argument `h`: must be real number,
    not str".
    """

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except (TypeError, OverflowError) as e:
            for note in getattr(e, "__notes__", ()):
                m = re.fullmatch(r"while processing '(\w+)'", note)
                if m:
                    raise type(e)(f"argument `{m.group(1)}`: {e}") from e
            raise

    return wrapped


for _cls in (Model, Stepper):
    for _name, _attr in list(vars(_cls).items()):
        if callable(_attr) and not _name.startswith("_"):
            setattr(_cls, _name, _naming_the_argument(_attr))
dlqr = _naming_the_argument(dlqr)
tangent_basis = _naming_the_argument(tangent_basis)
del _cls, _name, _attr

__all__ = [
    "HamelError",
    "Model",
    "ModelError",
    "Run",
    "SchemeError",
    "StepError",
    "Stepper",
    "__version__",
    "dlqr",
    "tangent_basis",
]
