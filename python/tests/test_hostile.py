"""The hostile-input campaign's findings from Python (issue 29, second
pass): each test failed before its fix."""

import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hamel

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPHERE = str(ROOT / "models" / "spherical_pendulum.hamel")
TORQUE = str(ROOT / "models" / "torque_driven_spherical_pendulum.hamel")
CHAIN = str(ROOT / "models" / "spherical_chain.hamel")


def pendulum(tmp_path, extra="", initial="th = 0.3, th' = 0"):
    f = tmp_path / "pend.hamel"
    f.write_text(
        "model pend {\n    parameters { m = 1.0, g = 9.81 }\n    coordinates { th }\n"
        f"    lagrangian = 0.5 * m * th'^2 + m * g * cos(th){extra}\n"
        f"    initial released {{ {initial} }}\n}}\n"
    )
    return str(f)


def test_a_lagrangian_of_14000_terms_loads_and_deep_nesting_is_an_exception(tmp_path):
    # It killed the interpreter (SIGSEGV): run in a child to keep pytest alive.
    path = pendulum(tmp_path, " + 0*th" * 14_000)
    code = textwrap.dedent(f"""
        import hamel
        m = hamel.Model({path!r})
        print(m.simulate("hamel", h=0.01, steps=10).ok)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr
    deep = pendulum(tmp_path, " + th" + "^th" * 14_000)
    with pytest.raises(hamel.ModelError, match="expression nested 257 deep, more than the limit 256"):
        hamel.Model(deep)


def test_zero_over_zero_and_a_value_given_twice_are_refused(tmp_path):
    m = hamel.Model(pendulum(tmp_path, initial="th = 0/0, th' = 0"))
    with pytest.raises(Exception, match="th = NaN"):
        m.simulate("hamel", h=0.01, steps=10, init="released")
    with pytest.raises(hamel.ModelError, match="`th` is given twice in initial state `released`"):
        hamel.Model(pendulum(tmp_path, initial="th = 2.0, th = 1.0, th' = 0"))
    with pytest.raises(Exception, match="NaN"):
        hamel.Model(TORQUE).simulate("hamel", h=0.05, steps=10, inputs={"tau": "0/0"})


def test_inputs_are_refused_with_what_is_wrong():
    m = hamel.Model(TORQUE)
    with pytest.raises(ValueError, match="rows past the end would not be used"):
        m.simulate("hamel", h=0.05, steps=10, inputs=np.ones((50, 1)))
    # one row per step, or one more for the last state
    assert m.simulate("hamel", h=0.05, steps=10, inputs=np.ones((11, 1))).ok
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"input `tau`: (NaN|inf) is not a finite number"):
            m.simulate("hamel", h=0.05, steps=10, inputs={"tau": bad})
    with pytest.raises(ValueError) as e:
        m.simulate("hamel", h=0.05, steps=10, inputs={"tau": "sin("})
    assert "found the end of the expression" in str(e.value) and "}" not in str(e.value)


def test_a_state_that_is_not_finite_is_named():
    s = hamel.Model(SPHERE).stepper("hamel", 0.1)
    n = len(s.state_names)
    with pytest.raises(ValueError, match="z is not finite: component 0 is NaN"):
        s.invariants(np.full(n, np.nan))
    with pytest.raises(ValueError, match="z is not finite"):
        s.step(np.full(n, np.nan))


@pytest.mark.parametrize(
    "call, want",
    [
        (lambda m: m.simulate("hamel", h="0.1", steps=10), "argument `h`: must be real number, not str"),
        (lambda m: m.simulate("hamel", h=0.1, steps=10.5), "argument `steps`: 'float' object cannot be interpreted as an integer"),
        (lambda m: m.simulate(3, h=0.1, steps=10), "argument `scheme`"),
        (lambda m: m.simulate("hamel", h=0.1, steps=10, state=[0.3]), "argument `state`"),
        (lambda m: m.simulate("hamel", h=0.1, steps=10, compensated="no"), "argument `compensated`"),
        (lambda m: m.simulate_many("hamel", h=0.01, steps=10, params={"g": 9.81}), "argument `params`"),
        (lambda m: hamel.Model(b"models/spherical_pendulum.hamel"), "argument `path`: give a str or os.PathLike, not bytes"),
        (lambda m: hamel.Model(SPHERE, params=[1, 2]), "argument `params`: give a dict, not list"),
        (lambda m: hamel.Model(CHAIN, sizes={"N": 2.5}), "argument `sizes`: size `N` must be an integer"),
        (lambda m: hamel.Model(CHAIN, sizes={"N": "3"}), "argument `sizes`: size `N` must be an integer"),
    ],
)
def test_type_errors_name_the_argument(call, want):
    m = hamel.Model(SPHERE)
    with pytest.raises(TypeError) as e:
        call(m)
    assert want in str(e.value)


def test_a_step_that_overflows_names_the_step_size_or_the_parameter():
    m = hamel.Model(SPHERE)
    with pytest.raises(hamel.StepError, match="the step size h = 1e300 is so large") as e:
        m.simulate("hamel", h=1e300, steps=10)
    assert e.value.run is not None
    with pytest.raises(hamel.StepError, match=r"parameter\(s\) g = 1e300"):
        m.simulate("hamel", h=0.1, steps=10, params={"g": 1e300})


def test_a_force_not_finite_at_the_initial_state_is_named(tmp_path):
    # The same words as the CLI's (one rule in hamel_load::steps::first_step_hint).
    f = tmp_path / "f.hamel"
    f.write_text(
        "model pend {\n parameters { m = 1.0, g = 9.81 }\n inputs { u }\n coordinates { th }\n"
        " lagrangian = 0.5 * m * th'^2 + m * g * cos(th)\n force th = u / th\n"
        " initial released { th = 0, th' = 0 }\n}\n"
    )
    m = hamel.Model(str(f))
    with pytest.raises(hamel.StepError, match=r"the force on `th'` is NaN at the initial state \(th = 0, th' = 0\)"):
        m.simulate("hamel", h=0.01, steps=10)


def test_a_subnormal_parameter_is_refused_by_name_as_the_cli_refuses_it(tmp_path):
    # m = 1e-320 failed as "non-finite physical state", naming nothing.
    with pytest.raises(hamel.ModelError, match=r"parameter `m` = 1e-320 is subnormal") as e:
        hamel.Model(_tiny(tmp_path))
    assert "pend.hamel:2:" in str(e.value)
    m = hamel.Model(SPHERE)
    for bad in ({"m": 1e-320}, {"g": -5e-324}):
        with pytest.raises(ValueError, match=r"parameter `[mg]` = .* is subnormal"):
            m.simulate("hamel", h=0.1, steps=10, params=bad)
        # a member fails alone: its place in the list holds the error
        (member,) = m.simulate_many("hamel", h=0.1, steps=10, params=[bad])
        assert isinstance(member, ValueError) and "is subnormal" in str(member), member
    # the smallest normal double is a value (the run itself is then judged)
    assert m.simulate("hamel", h=0.1, steps=10, params={"g": 2.3e-308}).ok


def _tiny(tmp_path):
    path = pendulum(tmp_path)
    text = pathlib.Path(path).read_text().replace("m = 1.0", "m = 1e-320", 1)
    pathlib.Path(path).write_text(text)
    return path


def test_a_kinetic_term_whose_hessian_vanishes_is_not_called_absent(tmp_path):
    # L = th'^4/4 at th' = 0: the term is there; its second derivative is 0 here.
    m = hamel.Model(_quartic(tmp_path))
    with pytest.raises(ValueError, match=r"kinetic term in th' is not quadratic.*vanishes at this state \(th' = 0\)") as e:
        m.simulate("hamel_averaged", h=0.01, steps=10, init="released")
    assert "no kinetic term" not in str(e.value)


def _quartic(tmp_path):
    path = pendulum(tmp_path)
    text = pathlib.Path(path).read_text().replace("0.5 * m * th'^2", "0.25 * th'^4", 1)
    pathlib.Path(path).write_text(text)
    return path
