"""The host API's promises, from Python: a step is a function of the state
given, arguments are refused with the argument named, resources are bounded,
Ctrl-C stops a run and keeps it (issues 25 and 29)."""

import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import hamel

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPHERE = str(ROOT / "models" / "spherical_pendulum.hamel")
INVERTED = str(ROOT / "models" / "inverted_spherical_pendulum.hamel")


def test_interleaved_trajectories_step_as_fresh_ones_to_the_bit():
    m = hamel.Model(SPHERE)
    shared = m.stepper("hamel_averaged", 0.1)
    a = shared.initial("published")
    b = shared.initial("over_equator")
    for _ in range(300):
        a = shared.step(a)
        b = shared.step(b)
    fresh = m.stepper("hamel_averaged", 0.1)
    a1 = fresh.initial("published")
    for _ in range(300):
        a1 = fresh.step(a1)
    fresh = m.stepper("hamel_averaged", 0.1)
    b1 = fresh.initial("over_equator")
    for _ in range(300):
        b1 = fresh.step(b1)
    assert np.array_equal(a, a1) and np.array_equal(b, b1)
    # ... and as simulate records them.
    run = m.simulate("hamel_averaged", h=0.1, steps=300, init="over_equator")
    q, v = shared.physical(b)
    assert np.array_equal(q, run.q[-1]) and np.array_equal(v, run.v[-1])
    # A state the stepper never produced steps the same on any stepper, whatever it stepped before.
    z = a + 1e-3 * np.arange(len(a))
    assert np.array_equal(shared.step(z), m.stepper("hamel_averaged", 0.1).step(z))


def test_stepper_takes_lists_int_arrays_and_inputs_by_name():
    m = hamel.Model(INVERTED)
    s = m.stepper("hamel_midpoint", 0.05)
    z = s.initial("tilted")
    by_array = s.step(z, np.array([0.3, -0.2]))
    assert np.array_equal(s.step(list(z), [0.3, -0.2]), by_array)
    assert np.array_equal(s.step(z, {"u1": 0.3, "u2": -0.2}), by_array)
    # int arrays and ints are numbers
    assert np.array_equal(s.step(z, np.array([1, 0])), s.step(z, [1.0, 0.0]))
    with pytest.raises(ValueError, match="u: unknown input `u3`"):
        s.step(z, {"u3": 1.0})
    with pytest.raises(ValueError, match="z: expected a sequence"):
        s.step("abc")
    with pytest.raises(ValueError, match="takes 2 input value"):
        s.step(z, [1.0])


def test_bad_arguments_are_value_errors_naming_the_argument():
    m = hamel.Model(SPHERE)
    with pytest.raises(ValueError, match=r"unknown scheme `hamel_midpont` \(available: hamel \(= hamel_midpoint\), hamel_midpoint"):
        m.simulate("hamel_midpont", h=0.1, steps=1)
    with pytest.raises(ValueError, match=r"steps = -5: -5 is not a number of steps"):
        m.simulate(h=0.1, steps=-5)
    for h in [-0.1, 0.0, float("nan")]:
        with pytest.raises(ValueError, match="the step size must be a positive finite number"):
            m.simulate(h=h, steps=1)
        with pytest.raises(ValueError, match="the step size must be a positive finite number"):
            m.stepper("hamel_averaged", h)
    with pytest.raises(ValueError, match="give steps or t_end"):
        m.simulate(h=0.1, steps=1, t_end=1.0)
    with pytest.raises(ValueError, match="every = -1"):
        m.simulate(h=0.1, steps=1, every=-1)


def test_inputs_shorter_than_the_run_are_refused():
    m = hamel.Model(INVERTED)
    with pytest.raises(ValueError, match="the inputs have 3 row"):
        m.simulate("hamel_midpoint", h=0.05, steps=10, init="tilted", inputs=np.zeros((3, 2)))
    run = m.simulate("hamel_midpoint", h=0.05, steps=3, init="tilted", inputs=np.zeros((3, 2)))
    assert run.q.shape[0] == 4


def test_absurd_thread_counts_are_refused_at_once():
    m = hamel.Model(SPHERE)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="threads = 1000000 threads: give 1 to"):
        m.simulate_many(h=0.1, steps=1, states=[None], threads=10**6)
    with pytest.raises(ValueError, match="threads = 0 threads"):
        m.simulate_many(h=0.1, steps=1, states=[None], threads=0)
    assert time.monotonic() - t0 < 1.0


INTERRUPTED = """
import sys, time, hamel
m = hamel.Model({path!r})
print("ready", flush=True)
t0 = time.monotonic()
try:
    {call}
except KeyboardInterrupt as e:
    runs = [e.run] if hasattr(e, "run") else e.runs
    steps = [r.summary["steps"] for r in runs]
    print("interrupted", time.monotonic() - t0, min(steps), max(steps), flush=True)
    sys.exit(0)
print("finished", flush=True)
sys.exit(1)
"""


@pytest.mark.parametrize("call", [
    'm.simulate("hamel_averaged", h=1e-3, steps=10**10, every=10**6)',
    'm.simulate_many("hamel_averaged", h=1e-3, steps=10**10, states=[None] * 4, threads=2)',
])
def test_ctrl_c_stops_a_run_within_a_second_and_keeps_it(call):
    code = textwrap.dedent(INTERRUPTED).format(path=SPHERE, call=call)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    took = time.monotonic() - sent
    assert p.returncode == 0, out + err
    words = out.split()
    assert words[0] == "interrupted", out + err
    # stopped within a second of the signal, with the steps so far kept
    assert took < 1.5, took
    # (members of an ensemble not started yet come back with 0 steps)
    assert int(words[3]) > 0 and int(words[3]) < 10**10, out
