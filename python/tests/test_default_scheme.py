"""The default scheme of every Python entry point is the discrete Hamel scheme
with midpoint kinematics where it applies, else the first scheme that does
(RATTLE for holonomic constraints in Cartesian coordinates); the averaged form
is one word away."""

from pathlib import Path

import numpy as np

import hamel

ROOT = Path(__file__).resolve().parents[2]
KEPLER = str(ROOT / "models" / "gallery" / "kepler.hamel")
CARTESIAN = str(ROOT / "models" / "spherical_pendulum_cartesian.hamel")


def test_default_is_the_midpoint_form_and_keeps_angular_momentum():
    m = hamel.Model(KEPLER)
    assert m.schemes()[0] == "hamel_midpoint"
    run = m.simulate(h=0.01, steps=1000, init="perihelion")
    assert run.summary["scheme"] == "hamel_midpoint"
    L = run.invariants["L"]
    # Midpoint keeps the angular momentum of the rotation symmetry to round-off...
    assert np.max(np.abs(L - L[0])) < 1e-12 * abs(L[0])
    averaged = m.simulate("hamel_averaged", h=0.01, steps=1000, init="perihelion")
    assert averaged.summary["scheme"] == "hamel_averaged"
    La = averaged.invariants["L"]
    # ... the averaged form only to O(h²) (3.8e-4 here; README "Schemes").
    assert np.max(np.abs(La - La[0])) > 1e-5 * abs(La[0])
    # `hamel` names the default; the stepper and the ensemble share it.
    many = m.simulate_many(h=0.01, steps=1000, init="perihelion", states=[None])[0]
    assert many.summary["scheme"] == "hamel_midpoint"
    s, sh = m.stepper(h=0.01), m.stepper("hamel", h=0.01)
    z = s.initial("perihelion")
    assert np.array_equal(s.step(z), sh.step(z))


def test_a_model_hamel_cannot_run_defaults_to_rattle():
    # |x| = r is a holonomic constraint the hamel scheme does not impose.
    m = hamel.Model(CARTESIAN)
    assert "hamel_midpoint" not in m.schemes()
    run = m.simulate(h=0.05, steps=1000)
    assert run.summary["scheme"] == "rattle"
    # RATTLE keeps the constraint and the vertical angular momentum exactly.
    assert run.summary["max_constraint_error"] < 1e-12
    J = run.invariants["J"]
    assert np.max(np.abs(J - J[0])) < 1e-12 * abs(J[0])
    many = m.simulate_many(h=0.05, steps=10, states=[None])[0]
    assert many.summary["scheme"] == "rattle"
    s, sr = m.stepper(h=0.05), m.stepper("rattle", h=0.05)
    z = s.initial("published")
    assert np.array_equal(s.step(z), sr.step(z))
