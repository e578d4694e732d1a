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
