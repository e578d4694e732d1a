"""Gallery models from Python, checked against closed forms (not hamel's own
output). The projectile's steps are explicit (no Newton unknowns); they once
raised PanicException, and simulate_many lost every member."""

import pathlib

import numpy as np
import pytest

import hamel

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROJECTILE = str(ROOT / "models" / "gallery" / "projectile.hamel")
G = 9.81


def parabola(t, vx=3.0, vy=4.0):
    return np.array([vx * t, 1.0 + vy * t - 0.5 * G * t * t])


@pytest.mark.parametrize("scheme", ["hamel_averaged", "hamel_midpoint", "stormer_verlet"])
def test_projectile_follows_its_parabola(scheme):
    m = hamel.Model(PROJECTILE)
    run = m.simulate(scheme, h=0.01, steps=200, init="throw")
    assert np.abs(run.q[-1] - parabola(2.0)).max() < 1e-11
    many = m.simulate_many(scheme, h=0.01, steps=200, init="throw", states=[{"x'": [v]} for v in (1.0, 2.0, 3.0)])
    for v, r in zip((1.0, 2.0, 3.0), many):
        assert not isinstance(r, Exception), r
        assert np.abs(r.q[-1] - parabola(2.0, vx=v)).max() < 1e-11


def test_projectile_stepper_loop():
    m = hamel.Model(PROJECTILE)
    stepper = m.stepper("stormer_verlet", 0.01)
    z = stepper.initial("throw")
    for _ in range(200):
        z = stepper.step(z)
    q, _ = stepper.physical(z)
    assert np.abs(np.asarray(q) - parabola(2.0)).max() < 1e-11


CHARGED = str(ROOT / "models" / "gallery" / "charged_particle.hamel")
FOUCAULT = str(ROOT / "models" / "gallery" / "foucault_pendulum.hamel")


@pytest.mark.parametrize("scheme", ["hamel_averaged", "hamel_midpoint", "stormer_verlet", "rattle"])
def test_charged_particle_runs_on_its_larmor_circle(scheme):
    # ω_c = eB/m = 2 from x = (1, 0, 0), ẋ = (0, -2, 0.3): x + iy = e^{-2it}, z = 0.3 t.
    m = hamel.Model(CHARGED)
    t = 3.0
    run = m.simulate(scheme, h=0.005, steps=600, init="gyrating")
    want = np.array([np.cos(2 * t), -np.sin(2 * t), 0.3 * t])
    assert run.ok, run.warnings
    assert np.abs(run.q[-1] - want).max() < 1e-4


def test_foucault_pendulum_in_cartesian_coordinates_runs_under_rattle():
    # A Coriolis term linear in the velocities with the rod as a holonomic
    # constraint: RATTLE's general form (once refused by every scheme).
    m = hamel.Model(FOUCAULT)
    assert m.schemes() == ["rattle"]
    run = m.simulate("rattle", h=0.005, steps=1000, init="released")
    assert run.ok, run.warnings
    assert run.summary["max_constraint_error"] < 1e-12
