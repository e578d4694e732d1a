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
