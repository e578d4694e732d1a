"""The Python package against the Rust API and the CLI, to the bit."""

import csv
import json
import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import hamel

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPHERE = str(ROOT / "models" / "spherical_pendulum.hamel")
DSP = str(ROOT / "models" / "double_spherical_pendulum.hamel")
CHAIN = str(ROOT / "models" / "spherical_chain.hamel")


def cli(*args):
    """The `hamel` command of this checkout: $HAMEL_BIN, or the binary
    `cargo test` / `cargo build` left in the target directory
    ($CARGO_TARGET_DIR or target/), or built by cargo."""
    binary = os.environ.get("HAMEL_BIN")
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for candidate in [target / "debug" / "hamel", target / "release" / "hamel"]:
        if binary is None and candidate.is_file():
            binary = str(candidate)
    cmd = [binary] if binary else ["cargo", "run", "-q", "-p", "hamel-cli", "--"]
    return subprocess.run(cmd + list(args), cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def sphere():
    return hamel.Model(SPHERE)


def test_published_run_keeps_energy_and_matches_the_cli_to_the_bit(sphere, tmp_path):
    run = sphere.simulate("hamel_averaged", h=0.2, steps=10_000, init="published")
    e = run.invariants["energy"]
    assert np.max(np.abs(e / e[0] - 1)) <= 1e-13
    assert run.summary["max_energy_error_rel"] <= 1e-13
    assert run.ok and run.summary["ok"] and run.warnings == []
    assert run.q.shape == (10_001, 3) and run.v.shape == (10_001, 3)
    assert run.t[-1] == pytest.approx(2000.0)
    out = tmp_path / "cli"
    p = cli("simulate", SPHERE, "--scheme", "hamel_averaged", "--h", "0.2", "--steps", "10000", "--every", "1",
            "--no-plots", "--out", str(out), "--summary", "json")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    for key in ["max_energy_error_rel", "max_constraint_error", "max_momentum_error_rel",
                "energy_initial", "energy_min", "energy_max", "newton_iterations_mean", "ok"]:
        assert run.summary[key] == summary[key], key
    with open(out / "trajectory.csv") as f:
        rows = list(csv.reader(f))
    table = np.array([[float(x) for x in r[2:]] for r in rows[1:]])
    # Rust prints the shortest representation that reads back to the same double.
    assert np.array_equal(table, np.hstack([run.q, run.v]))


def test_chain_loads_with_sizes():
    chain = hamel.Model(CHAIN, sizes={"N": 3})
    coords, vels = chain.components()
    assert len(coords) == 9 and len(vels) == 9
    run = chain.simulate("hamel_averaged", h=0.01, steps=50)
    assert run.q.shape == (51, 9) and run.ok


def test_a_size_too_large_is_refused_for_the_scheme_asked(monkeypatch):
    # The model is read at any size; the cost of deriving a scheme is
    # estimated on the scheme's first use, and a limit no derivation meets
    # refuses it then, before it derives, with that scheme's estimate.
    monkeypatch.setenv("HAMEL_CACHE", "off")
    monkeypatch.setenv("HAMEL_MAX_DERIVE_SECONDS", "1e-9")
    chain = hamel.Model(CHAIN, sizes={"N": 200})
    assert chain.name == "spherical_chain"
    with pytest.raises(ValueError) as e:
        chain.simulate("hamel_averaged", h=0.01, steps=1)
    msg = str(e.value)
    assert "deriving the model would take about" in msg and "at N = 200 for hamel_averaged's sparse step (measured" in msg, msg
    assert "HAMEL_MAX_DERIVE_SECONDS" in msg, msg


def test_errors_are_located_exceptions(tmp_path):
    bad = tmp_path / "bad.hamel"
    bad.write_text("model bad {\n    parameters { m = 1.0 }\n    coordinates { x }\n    lagrangian = m * x'^2 / 2 +\n}\n")
    with pytest.raises(hamel.ModelError) as e:
        hamel.Model(str(bad))
    # The same located message as the CLI: file, line, column, the offending text.
    assert "bad.hamel:5:1" in str(e.value) and "expected a name or a number" in str(e.value), str(e.value)
    with pytest.raises(hamel.ModelError, match="No such file"):
        hamel.Model(str(tmp_path / "missing.hamel"))
    with pytest.raises(ValueError, match="no parameter `gravity`"):
        hamel.Model(SPHERE, params={"gravity": 1.0})
    m = hamel.Model(SPHERE)
    with pytest.raises(ValueError, match="unknown scheme"):
        m.simulate("verlet", h=0.1, steps=1)
    with pytest.raises(ValueError, match="no initial state `nowhere`"):
        m.simulate(h=0.1, steps=1, init="nowhere")
    with pytest.raises(ValueError, match="step size"):
        m.simulate(h=0.0, steps=1)
    # Initial data off the constraint γ·ξ = 0: a step error naming the constraint.
    with pytest.raises(hamel.StepError, match="constraint"):
        m.simulate(h=0.1, steps=1, state={"xi": [0.0, 0.0, 1.0]})


def test_failed_run_keeps_its_partial_run():
    m = hamel.Model(SPHERE)
    # A huge step: Newton fails at some step; the run up to there is attached.
    try:
        m.simulate("hamel_averaged", h=50.0, steps=100, init="over_equator")
    except hamel.StepError as e:
        assert "step" in str(e)
        assert e.run.q.shape[0] >= 1 and np.all(np.isfinite(e.run.q))
    else:
        pytest.fail("h = 50 should make Newton fail")


def test_stepper_loop_equals_simulate_and_sensitivity_matches_differences(sphere):
    run = sphere.simulate("hamel_averaged", h=0.2, steps=200, init="published")
    s = sphere.stepper("hamel_averaged", 0.2)
    z = s.initial("published")
    for k in range(200):
        z = s.step(z)
    q, v = s.physical(z)
    assert np.array_equal(q, run.q[-1]) and np.array_equal(v, run.v[-1])
    inv = s.invariants(z)
    assert inv["energy"] == run.invariants["energy"][-1]
    z0 = s.initial("published")
    z1, jac = s.step_with_sensitivity(z0)
    assert np.array_equal(z1, sphere.stepper("hamel_averaged", 0.2).step(z0))
    eps = 1e-6
    fd = np.empty_like(jac)
    for j in range(len(z0)):
        dz = np.zeros_like(z0)
        dz[j] = eps
        fd[:, j] = (s.step(z0 + dz) - s.step(z0 - dz)) / (2 * eps)
    assert np.max(np.abs(fd - jac)) <= 1e-6
    with pytest.raises(ValueError, match="components"):
        s.step(np.zeros(2))


def test_simulate_many_keeps_order_and_failed_members():
    m = hamel.Model(SPHERE)
    states = [{"xi": [0.5 + 0.05 * i, 0, 0]} for i in range(8)]
    states[5] = {"xi": [0.0, 0.0, 1.0]}  # off the constraint: fails alone
    params = [{"g": 9.0 + i} for i in range(8)]
    runs = m.simulate_many("hamel_averaged", h=0.1, steps=300, init="published", states=states, params=params, every=1)
    assert len(runs) == 8
    assert isinstance(runs[5], hamel.StepError)
    for i, r in enumerate(runs):
        if i == 5:
            continue
        alone = m.simulate("hamel_averaged", h=0.1, steps=300, init="published", state=states[i], params=params[i])
        assert np.array_equal(r.q, alone.q) and np.array_equal(r.v, alone.v)
    one = m.simulate_many("hamel_averaged", h=0.1, steps=300, init="published", states=states, params=params, every=1, threads=1)
    assert all(np.array_equal(a.q, b.q) for a, b in zip(runs, one) if not isinstance(a, Exception))


def test_gil_is_released_while_rust_runs():
    m = hamel.Model(DSP)
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = counter[0]
        m.simulate("hamel_averaged", h=0.01, steps=20_000, init="pattern_I", every=0)
        during = counter[0] - before
    finally:
        stop.set()
        t.join()
    # With the GIL held for the whole run, the other thread could not count.
    assert during > 10_000, during


def test_dask_example_equals_in_process():
    pytest.importorskip("dask.distributed")
    sys.path.insert(0, str(ROOT / "python" / "examples"))
    import dask_ensemble
    from dask.distributed import Client, LocalCluster

    params = dask_ensemble.perturbations(40, seed=3)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        remote = dask_ensemble.run_on_dask(client, DSP, "hamel_averaged", 0.01, 200, "pattern_I", params, chunk=16)
    local = dask_ensemble.run_chunk(DSP, "hamel_averaged", 0.01, 200, "pattern_I", params)
    assert len(remote) == len(local) == 40
    for a, b in zip(remote, local):
        assert np.array_equal(a["q"], b["q"]) and np.array_equal(a["v"], b["v"])
        assert a["summary"]["max_energy_error_rel"] == b["summary"]["max_energy_error_rel"]


TORQUE = str(ROOT / "models" / "torque_driven_spherical_pendulum.hamel")
INVERTED = str(ROOT / "models" / "inverted_spherical_pendulum.hamel")


def test_inputs_drive_the_momentum_balance_and_are_recorded(tmp_path):
    m = hamel.Model(TORQUE)
    assert m.inputs() == ["tau"]
    h, steps, tau = 0.05, 400, 2.0
    run = m.simulate("hamel_midpoint", h=h, steps=steps, inputs={"tau": tau})
    j = run.invariants["J"]
    assert np.max(np.abs(j - j[0] - tau * run.t)) <= 1e-12 * np.max(np.abs(j))
    assert run.inputs == ["tau"] and np.all(run.u == tau)
    assert run.summary["forced"] and run.summary["max_energy_balance_error_rel"] < 1e-13
    # One row per step; an expression in t; the CLI's CSV, to the bit.
    rows = np.full((steps, 1), tau)
    assert np.array_equal(m.simulate("hamel_midpoint", h=h, steps=steps, inputs=rows).q, run.q)
    expr = m.simulate("hamel_midpoint", h=h, steps=steps, inputs={"tau": "2*cos(t)"})
    assert np.allclose(expr.u[:, 0], 2 * np.cos(expr.t + h / 2))
    out = tmp_path / "tq"
    r = cli("simulate", TORQUE, "--scheme", "hamel_midpoint", "--h", str(h), "--steps", str(steps),
            "--input", "tau=2*cos(t)", "--every", "1", "--no-plots", "--out", str(out))
    assert r.returncode == 0, r.stderr
    with open(out / "trajectory.csv") as f:
        data = list(csv.DictReader(f))
    assert [float(d["tau"]) for d in data] == list(expr.u[:, 0])
    assert [float(d["gamma[0]"]) for d in data] == list(expr.q[:, 0])
    with pytest.raises(ValueError, match="unknown input"):
        m.simulate("hamel_midpoint", h=h, steps=2, inputs={"torque": 1.0})


def test_step_linearized_matches_differences():
    s = hamel.Model(INVERTED).stepper("hamel_midpoint", 0.05)
    z0 = s.initial("tilted")
    u0 = np.array([0.3, -0.2])
    z1, a, b = s.step_linearized(z0, u0)
    assert a.shape == (5, 5) and b.shape == (5, 2)
    eps = 1e-6
    for j in range(2):
        du = np.zeros(2)
        du[j] = eps
        fd = (s.step(z0, u0 + du) - s.step(z0, u0 - du)) / (2 * eps)
        assert np.max(np.abs(fd - b[:, j])) <= 1e-6 * np.max(np.abs(b))
    assert np.array_equal(z1, s.step(z0, u0))


def test_newton_options_reach_the_solve_and_bad_values_name_the_argument(tmp_path):
    m = hamel.Model(DSP)
    strict = m.simulate("hamel_averaged", h=0.01, steps=300)
    loose = m.simulate("hamel_averaged", h=0.01, steps=300, newton_tol=1e-6)
    assert strict.summary["newton_tolerance"] == np.finfo(float).eps
    assert loose.summary["newton_tolerance"] == 1e-6
    # About two iterations a step at machine precision; at 1e-6 the second
    # is mostly not needed.
    assert loose.summary["newton_iterations_mean"] < strict.summary["newton_iterations_mean"] - 0.5
    # The same numbers as the CLI's with the same flag.
    p = cli("simulate", DSP, "--scheme", "hamel_averaged", "--h", "0.01", "--steps", "300", "--newton-tol", "1e-6",
            "--no-plots", "--out", str(tmp_path / "cli"), "--summary", "json")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    assert summary["newton_iterations_mean"] == loose.summary["newton_iterations_mean"]
    assert summary["max_energy_error_rel"] == loose.summary["max_energy_error_rel"]
    # An iteration bound of 1 is too few: the error names the step.
    with pytest.raises(hamel.StepError, match=r"^step 0: Newton did not converge in 1 iterations"):
        m.simulate("hamel_averaged", h=0.01, steps=10, newton_max_iter=1)
    runs = m.simulate_many("hamel_averaged", h=0.01, steps=10, states=[None, None], newton_max_iter=1)
    assert all(isinstance(r, hamel.StepError) for r in runs)
    fewer = m.simulate_many("hamel_averaged", h=0.01, steps=300, states=[None], newton_tol=1e-6)[0]
    assert np.array_equal(fewer.q, loose.q)
    for kwargs, message in [
        ({"newton_tol": 0.0}, "newton_tol = 0: the Newton tolerance must be a positive finite number"),
        ({"newton_tol": -1e-9}, "newton_tol = -0.000000001"),
        ({"newton_tol": float("nan")}, "newton_tol = NaN"),
        ({"newton_tol": float("inf")}, "newton_tol = inf"),
        ({"newton_max_iter": 0}, "newton_max_iter = 0: the Newton iteration bound must be at least 1"),
        ({"newton_max_iter": -2}, "newton_max_iter = -2"),
    ]:
        with pytest.raises(ValueError, match=message):
            m.simulate("hamel_averaged", h=0.01, steps=10, **kwargs)
        with pytest.raises(ValueError, match=message):
            m.simulate_many("hamel_averaged", h=0.01, steps=10, states=[None], **kwargs)
