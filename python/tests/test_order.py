"""`order=4` and `order=6`: the scheme composed with itself, in `simulate`,
`simulate_many` and `Stepper`; bad orders are refused naming `order`."""

import pathlib

import numpy as np
import pytest

import hamel

ROOT = pathlib.Path(__file__).resolve().parents[2]
SLEIGH = str(ROOT / "models" / "chaplygin_sleigh.hamel")
CART_POLE = """
model cart_pole {
    parameters { mc = 1.0, mp = 0.3, l = 0.8, g = 9.81 }
    inputs { u }
    coordinates { x, th }
    lagrangian = 0.5 * (mc + mp) * x'^2 + mp * l * x' * th' * cos(th) + 0.5 * mp * l^2 * th'^2 - mp * g * l * cos(th)
    force x = u
    initial up { x = 0, th = 0.3, x' = 0.2, th' = 0 }
}
"""


def sleigh_reference(t_end, n=4000):
    """Chaplygin sleigh by hand: u' = a om^2, (I + m a^2) om' = -m a u om, RK4."""
    m, a, i = 1.0, 0.5, 0.2

    def f(y):
        th, u, om = y[2], y[3], y[4]
        return np.array([u * np.cos(th), u * np.sin(th), om, a * om * om, -m * a * u * om / (i + m * a * a)])

    y = np.array([0.0, 0.0, 0.0, 1.0, 1.0])
    h = t_end / n
    for _ in range(n):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y[:3]


@pytest.fixture(scope="module")
def sleigh():
    return hamel.Model(SLEIGH)


def test_orders_four_and_six_are_observed(sleigh):
    exact = sleigh_reference(2.0)
    for order, hs in [(2, [0.1, 0.05]), (4, [0.1, 0.05]), (6, [0.2, 0.1])]:
        err = []
        for h in hs:
            run = sleigh.simulate("hamel_midpoint", h=h, t_end=2.0, every=0, order=order)
            assert run.ok
            err.append(np.max(np.abs(run.q[-1] - exact)))
        p = np.log2(err[0] / err[1])
        assert abs(p - order) < 0.2, (order, err, p)


def test_simulate_many_and_the_stepper_take_the_composed_step(sleigh):
    run = sleigh.simulate("hamel_midpoint", h=0.05, steps=40, order=4)
    assert "composed to order 4" in repr(run)
    many = sleigh.simulate_many("hamel_midpoint", h=0.05, steps=40, states=[None, None], order=4, every=1)
    assert np.array_equal(many[0].q, run.q)
    s = sleigh.stepper("hamel_midpoint", 0.05, order=4)
    z = s.initial()
    for _ in range(40):
        z = s.step(z)
    q, _ = s.physical(z)
    assert np.max(np.abs(q - run.q[-1])) < 1e-12


def test_linearization_of_the_composed_step_matches_differences(tmp_path):
    path = tmp_path / "cart_pole.hamel"
    path.write_text(CART_POLE)
    m = hamel.Model(str(path))
    s = m.stepper("hamel_midpoint", 0.05, order=4)
    z0 = s.initial("up")
    _, a, b = s.step_linearized(z0, u=[0.4])
    eps = 1e-6
    fd = np.empty_like(a)
    for j in range(len(z0)):
        dz = np.zeros_like(z0)
        dz[j] = eps
        fd[:, j] = (s.step(z0 + dz, u=[0.4]) - s.step(z0 - dz, u=[0.4])) / (2 * eps)
    fb = (s.step(z0, u=[0.4 + eps]) - s.step(z0, u=[0.4 - eps])) / (2 * eps)
    assert np.max(np.abs(fd - a)) < 1e-7
    assert np.max(np.abs(fb - b[:, 0])) < 1e-7


def test_bad_orders_are_refused_naming_the_argument(sleigh):
    with pytest.raises(ValueError, match=r"order=3: order 3 is not offered"):
        sleigh.simulate("hamel_midpoint", h=0.1, steps=2, order=3)
    with pytest.raises(ValueError, match=r"order=5"):
        sleigh.stepper("hamel_midpoint", 0.1, order=5)
    with pytest.raises(ValueError, match=r"order=7"):
        sleigh.simulate_many("hamel_midpoint", h=0.1, steps=2, states=[None], order=7)
    with pytest.raises(OverflowError, match="order"):
        sleigh.simulate("hamel_midpoint", h=0.1, steps=2, order=-4)
