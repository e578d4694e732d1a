"""LQR design from Python on a model's linearized step: `hamel.tangent_basis`
and `hamel.dlqr`, checked against the algebraic Riccati equation (numpy) and
against the closed loop the nonlinear step actually runs."""

from pathlib import Path

import numpy as np
import pytest

import hamel

ROOT = Path(__file__).resolve().parents[2]
CART_POLE = str(ROOT / "models" / "gallery" / "cart_pole.hamel")


def test_tangent_basis_spans_the_null_space_orthonormally():
    rows = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    t = hamel.tangent_basis(rows)
    assert t.shape == (3, 2)
    assert np.allclose(rows @ t, 0.0, atol=1e-14)
    assert np.allclose(t.T @ t, np.eye(2), atol=1e-14)
    # No rows: every direction is tangent.
    assert np.allclose(hamel.tangent_basis(np.zeros((0, 4))), np.eye(4))


def test_dlqr_solves_the_riccati_equation_and_the_cart_pole_follows_its_design():
    m = hamel.Model(CART_POLE)
    s = m.stepper("hamel", h=0.01)
    z_eq = s.initial("upright")
    z1, a, b = s.step_linearized(z_eq, [0.0])
    assert np.allclose(z1, z_eq, atol=1e-14), "upright is an equilibrium"
    q, r = np.eye(a.shape[0]), np.eye(b.shape[1])
    k, p, rho, iterations = hamel.dlqr(a, b, q, r)
    # The discrete algebraic Riccati equation, evaluated independently.
    gain = np.linalg.solve(r + b.T @ p @ b, b.T @ p @ a)
    residual = q + a.T @ p @ a - a.T @ p @ b @ gain - p
    assert np.linalg.norm(residual) < 1e-8 * np.linalg.norm(p)
    assert np.allclose(k, gain, rtol=1e-9, atol=1e-12)
    closed = a - b @ k
    assert rho == pytest.approx(max(abs(np.linalg.eigvals(closed))), rel=1e-9)
    assert rho < 1.0 and iterations > 0
    # The nonlinear step under u = −K (z − z_eq) follows the designed linear
    # closed loop from a small tilt (the gap is the nonlinearity's, O(δ²)).
    z = s.initial("tilted")
    delta = z - z_eq
    for _ in range(300):
        u = -k @ (z - z_eq)
        z = s.step(z, u)
        delta = closed @ delta
    start = np.linalg.norm(s.initial("tilted") - z_eq)
    assert np.linalg.norm(z - z_eq - delta) < 2e-2 * start


def test_control_arguments_are_checked():
    with pytest.raises(ValueError, match="inconsistent sizes"):
        hamel.dlqr(np.eye(2), np.ones((3, 1)), np.eye(2), np.eye(1))
    with pytest.raises(ValueError, match="rows: expected a two-dimensional array"):
        hamel.tangent_basis([1.0, 2.0])
    with pytest.raises(ValueError, match="not finite"):
        hamel.dlqr(np.eye(2) * np.nan, np.ones((2, 1)), np.eye(2), np.eye(1))
