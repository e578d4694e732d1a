#!/usr/bin/env python3
"""Peer benchmark: the N-link spherical chain in hamel and in MuJoCo.

The same chain in both tools: N point masses m = 1 on massless links of
length l = 1 joined by ball joints, pivot at the origin, gravity 9.81 along
-z, no damping, no contacts, no limits, started in the model files' `tilted`
state. The script

1. verifies that both tools simulate the same system: energy at t = 0 equal
   to round-off, bob positions after 1 s equal at small steps;
2. times one step (medians of repetitions, side by side in one run) for
   N = 4 ... 128 under MuJoCo's Euler, implicitfast and RK4 integrators and
   hamel's RATTLE and energy-momentum (maximal coordinates,
   models/spherical_chain_cartesian.hamel) and discrete Hamel (directors,
   models/spherical_chain.hamel, while its derivation fits a budget);
3. measures the time each tool and scheme needs to reach a target accuracy
   over 10 s of motion (relative energy error, max over the run; bob
   positions at t = 10 s against a converged reference) on a ladder of step
   sizes. Where the motion is so chaotic that round-off alone (gravity one
   ulp stronger) moves the bobs past a tenth of the position target by
   t = 10, no double-precision run can be ranked there: the table says so,
   and positions are compared at the last half second at which the
   reference is trusted, each tool running to that horizon;
4. writes bench/peer/results.json and prints the Markdown tables that the
   README shows between its `peer-benchmark` markers
   (python/tests/test_peer_benchmark.py checks that they agree).

Requirements: Python >= 3.9, `pip install mujoco numpy` (MuJoCo is needed for
measuring only: `--render` and the README test use results.json alone), and
the `hamel` command (`--hamel PATH`, else $HAMEL, else target/release/hamel,
else `hamel` on PATH).

    python3 bench/peer/chain.py --quick          # about 3 minutes, N <= 32
    python3 bench/peer/chain.py                  # the committed results
    python3 bench/peer/chain.py --full           # adds N = 64 to time-to-accuracy
    python3 bench/peer/chain.py --render --write-readme   # tables from results.json

How "point mass on a massless link" is realized in MuJoCo: body i has its
frame at bob i, its ball joint at (0, 0, 1) in its frame (the previous bob,
or the pivot), and an `inertial` element at its origin with mass 1 and
diaginertia (I, I, I) with a tiny I(N): 1e-10 up to N = 16, 1e-9 at 32,
1e-7 at 64, 1e-6 beyond (MuJoCo needs a positive definite mass matrix: a
zero inertia would leave each link's spin about its own axis without
inertia, and below these values round-off in its factorization shows). The
bodies' rotational energy, I |w|^2 / 2 per link, is then below 1e-9 of the
chain's energy; the verification reports how far the bobs move at t = 1 s
when I grows tenfold (the model's distance from point masses is about a
ninth of that).
"""

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results.json"
README = ROOT / "README.md"
CARTESIAN = ROOT / "models" / "spherical_chain_cartesian.hamel"
DIRECTOR = ROOT / "models" / "spherical_chain.hamel"
BEGIN = (
    "<!-- peer-benchmark:begin (bench/peer/chain.py renders this from bench/peer/results.json) -->"
)
END = "<!-- peer-benchmark:end -->"

G = 9.81
# MuJoCo's link inertia I(N), smallest first: (largest N, I). Below these,
# round-off in MuJoCo's factorization of the mass matrix shows (measured on
# RK4 over 1 s: the energy error and the bobs stop depending linearly on I;
# N = 32 diverges at 1e-11, N = 64 needs 1e-7, N = 128 1e-6).
INERTIA = ((16, 1e-10), (32, 1e-9), (64, 1e-7), (math.inf, 1e-6))
MJ_INTEGRATORS = ("euler", "implicitfast", "rk4")
# (label, model, scheme) of the hamel runs.
HAMEL_SCHEMES = (
    ("rattle", CARTESIAN, "rattle"),
    ("energy_momentum", CARTESIAN, "energy_momentum"),
    ("hamel", DIRECTOR, "hamel"),
)
# HOOK (issue 28 item 1): composed schemes of order 4 and 6. When the `hamel`
# binary accepts `--order`, add rows such as ("rattle_o4", CARTESIAN,
# "rattle", 4): `hamel_args` passes the order on, and the tables name the
# row by its label. Detected at run time by `hamel_supports_order`.
ORDERS = (4, 6)
ENERGY_TARGETS = (1e-3, 1e-6, 1e-9)
POSITION_TARGETS = (1e-3, 1e-6)
T_ACCURACY = 10.0
# The reference is trusted to a target when its round-off spread and its
# discretization error are below this share of it; positions are compared
# on a grid of this step (s) where it is not trusted at t = 10.
REFERENCE_SHARE = 0.1
HORIZON_STEP = 0.5

# ---------------------------------------------------------------- the chain


def tilted(n):
    """Angles a_i, link directions e_i and angular velocities w_i of `tilted`."""
    import numpy as np

    i = np.arange(1, n + 1)
    a = 0.3 + 0.1 * i
    e = np.stack([np.sin(a), 0 * a, -np.cos(a)], axis=1)
    w = np.stack([0.2 * np.cos(a), 0.8 - 0.1 * i, 0.2 * np.sin(a)], axis=1)
    return a, e, w


def point_mass_energy(x, v):
    """Energy of unit point masses at positions x with velocities v (rows)."""
    import numpy as np

    return 0.5 * float(np.sum(v * v)) + G * float(np.sum(x[:, 2]))


def link_inertia(n):
    """MuJoCo's isotropic link inertia I(N) (see INERTIA)."""
    return next(value for largest, value in INERTIA if n <= largest)


def mjcf(n, inertia):
    """MJCF text of the N-link chain (see the module docstring)."""
    opened = "".join(
        f'<body name="b{i}" pos="0 0 -1">'
        f'<joint name="j{i}" type="ball" pos="0 0 1" damping="0"/>'
        f'<inertial pos="0 0 0" mass="1" diaginertia="{inertia} {inertia} {inertia}"/>'
        for i in range(1, n + 1)
    )
    return (
        f'<mujoco model="chain{n}">'
        f'<option gravity="0 0 -{G}" timestep="0.001">'
        '<flag contact="disable" constraint="disable" energy="enable"/></option>'
        f"<worldbody>{opened}{'</body>' * n}</worldbody></mujoco>"
    )


def mj_model(n, integrator, dt, inertia=None):
    """Compiled MuJoCo model and data of the chain, in the `tilted` state."""
    import mujoco

    m = mujoco.MjModel.from_xml_string(mjcf(n, inertia or link_inertia(n)))
    m.opt.timestep = dt
    m.opt.integrator = {
        "euler": mujoco.mjtIntegrator.mjINT_EULER,
        "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
        "rk4": mujoco.mjtIntegrator.mjINT_RK4,
    }[integrator]
    d = mujoco.MjData(m)
    set_tilted(m, d, n)
    return m, d


def set_tilted(m, d, n):
    """Ball-joint quaternions and angular velocities of the `tilted` state.

    Body i's world rotation R_i is the rotation by -a_i about y, which takes
    the hanging direction (0, 0, -1) to e_i. A ball joint's qpos is the
    rotation relative to the parent, R_{i-1}^T R_i (by -(a_i - a_{i-1})
    about y), and its qvel the angular velocity relative to the parent in
    the child's frame, R_i^T (w_i - w_{i-1}).
    """
    import mujoco
    import numpy as np

    a, _, w = tilted(n)
    a_prev, w_prev = 0.0, np.zeros(3)
    for k in range(n):
        half = -(a[k] - a_prev) / 2
        d.qpos[4 * k : 4 * k + 4] = (math.cos(half), 0.0, math.sin(half), 0.0)
        c, s = math.cos(-a[k]), math.sin(-a[k])
        r = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
        d.qvel[3 * k : 3 * k + 3] = r.T @ (w[k] - w_prev)
        a_prev, w_prev = a[k], w[k]
    mujoco.mj_forward(m, d)


def mj_bobs(m, d, n):
    """Bob positions and velocities (world frame) after mj_forward."""
    import mujoco
    import numpy as np

    x = d.xpos[1 : n + 1].copy()
    v = np.zeros((n, 3))
    res = np.zeros(6)
    for k in range(n):
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, k + 1, res, 0)
        v[k] = res[3:]
    return x, v


def mj_diverged(d):
    """True if MuJoCo flagged an unstable acceleration (it then resets)."""
    import mujoco

    return d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0


def mj_run(n, integrator, dt, t_end, samples=4000, inertia=None, record=(), nudge_g=False):
    """Run MuJoCo for t_end; return stepping time, energy error, final bobs.

    Only the mj_step calls (in C, `nstep` steps at a time) are timed. The
    energy (MuJoCo's own, with mjENBL_ENERGY) is evaluated by mj_forward
    between chunks, at most `samples` times; the max relative error is taken
    over those samples and the final state. Bob positions are also kept at
    the times in `record` (`x_at`, by time). `nudge_g` moves gravity by one
    ulp: the run then measures how far round-off carries the motion.
    """
    import mujoco
    import numpy as np

    steps = int(round(t_end / dt))
    build = time.perf_counter()
    m, d = mj_model(n, integrator, dt, inertia)
    if nudge_g:
        m.opt.gravity[2] = np.nextafter(m.opt.gravity[2], -math.inf)
    build = time.perf_counter() - build
    e0 = float(d.energy[0] + d.energy[1])
    chunk = max(1, steps // samples)
    marks = {int(round(t / dt)): t for t in record}
    stepping, done, err, x_at = 0.0, 0, 0.0, {}
    while done < steps:
        k = min([chunk, steps - done] + [s - done for s in marks if s > done])
        t0 = time.perf_counter()
        mujoco.mj_step(m, d, nstep=k)
        stepping += time.perf_counter() - t0
        done += k
        mujoco.mj_forward(m, d)
        e = float(d.energy[0] + d.energy[1])
        if not math.isfinite(e) or mj_diverged(d):
            return {"diverged": True, "stepping_s": stepping, "build_s": build}
        err = max(err, abs(e - e0) / abs(e0))
        if done in marks:
            x_at[marks[done]] = mj_bobs(m, d, n)[0]
    x, _ = mj_bobs(m, d, n)
    return {
        "diverged": False,
        "stepping_s": stepping,
        "build_s": build,
        "energy_error": err,
        "x": x,
        "x_at": x_at,
    }


def mj_step_time(n, integrator, dt, steps, reps):
    """Median seconds per step of `steps` steps in one mj_step call.

    Also returns whether MuJoCo flagged a divergence, and the relative
    energy error at the end (infinite after a divergence: MuJoCo resets).
    """
    import mujoco

    times = []
    for _ in range(reps):
        m, d = mj_model(n, integrator, dt)
        e0 = float(d.energy[0] + d.energy[1])
        t0 = time.perf_counter()
        mujoco.mj_step(m, d, nstep=steps)
        times.append((time.perf_counter() - t0) / steps)
        diverged = mj_diverged(d)
        mujoco.mj_forward(m, d)
        err = math.inf if diverged else abs(float(d.energy[0] + d.energy[1]) - e0) / abs(e0)
    return statistics.median(times), diverged, err


# ---------------------------------------------------------------- hamel


def find_hamel(explicit):
    """Path of the hamel command."""
    for cand in (explicit, os.environ.get("HAMEL"), ROOT / "target" / "release" / "hamel"):
        if cand and Path(cand).is_file():
            return str(cand)
    found = shutil.which("hamel")
    if not found:
        sys.exit("no hamel command: pass --hamel PATH or set HAMEL")
    return found


def hamel_version(exe):
    """`hamel --version`, one line."""
    return subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()


def hamel_supports_order(exe):
    """True if `hamel simulate` accepts `--order` (the hook of ORDERS)."""
    out = subprocess.run([exe, "simulate", "--help"], capture_output=True, text=True).stdout
    return "--order" in out


def hamel_args(exe, model, scheme, n, h, t_end, out, order=None, cold=False):
    """Command line of one `hamel simulate` run recording only t = 0 and t_end."""
    steps = int(round(t_end / h))
    args = [exe, "simulate", str(model), "--scheme", scheme, "--h", repr(h)]
    args += ["--t-end", repr(t_end), "--size", f"N={n}", "--init", "tilted"]
    args += ["--summary", "json", "--no-plots", "--every", str(steps), "--force"]
    args += ["--out", str(out)]
    if order:
        args += ["--order", str(order)]
    if cold:
        args += ["--no-cache"]
    return args


def hamel_bobs(row, header, n):
    """Bob positions from a trajectory.csv row of either chain model."""
    import numpy as np

    col = {name: k for k, name in enumerate(header)}
    if "x[1][0]" in col:
        return np.array(
            [[float(row[col[f"x[{i}][{c}]"]]) for c in range(3)] for i in range(1, n + 1)]
        )
    e = np.array([[float(row[col[f"e[{i}][{c}]"]]) for c in range(3)] for i in range(1, n + 1)])
    return np.cumsum(e, axis=0)


def hamel_run(exe, model, scheme, n, h, t_end, timeout=None, order=None, cold=False):
    """Run `hamel simulate`; return its summary, wall time and final bobs.

    Returns {"timeout": True} when the command exceeds `timeout` seconds and
    {"failed": message} when it exits with an error (a step that failed).
    """
    with tempfile.TemporaryDirectory(prefix="peer-") as out:
        args = hamel_args(exe, model, scheme, n, h, t_end, out, order, cold)
        t0 = time.perf_counter()
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"timeout": True, "wall_s": time.perf_counter() - t0}
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            return {"failed": (p.stderr or p.stdout).strip().splitlines()[-1:], "wall_s": wall}
        summary = json.loads(p.stdout.strip().splitlines()[-1])
        lines = (Path(out) / "trajectory.csv").read_text().splitlines()
        header, last = lines[0].split(","), lines[-1].split(",")
        diag = (Path(out) / "diagnostics.csv").read_text().splitlines()
        energy_end = float(diag[-1].split(",")[diag[0].split(",").index("energy_error_rel")])
        steps = summary["steps"]
        return {
            "wall_s": wall,
            "stepping_s": summary["ns_per_step"] * 1e-9 * steps,
            "ns_per_step": summary["ns_per_step"],
            "energy_initial": summary["energy_initial"],
            "energy_error": summary["max_energy_error_rel"],
            "energy_error_end": energy_end,
            "t_last": float(last[1]),
            "x": hamel_bobs(last, header, n),
            "x0": hamel_bobs(lines[1].split(","), header, n),
        }


# ---------------------------------------------------------------- the study


def verify(exe, n, h):
    """Equality of the two chains: energy at t = 0 and bobs after 1 s."""
    import numpy as np

    _, e, w = tilted(n)
    m, d = mj_model(n, "rk4", h)
    x, v = mj_bobs(m, d, n)
    v_exact = np.cumsum(np.cross(w, e), axis=0)
    e_mj = point_mass_energy(x, v)
    e_mj_own = float(d.energy[0] + d.energy[1])
    mj = mj_run(n, "rk4", h, 1.0)
    mj_more_inertia = mj_run(n, "rk4", h, 1.0, inertia=10 * link_inertia(n))
    row = {"N": n, "h": h}
    for label, model, scheme in HAMEL_SCHEMES[:1] + HAMEL_SCHEMES[2:]:
        if model == DIRECTOR and n > 16:
            continue
        r = hamel_run(exe, model, scheme, n, h, 1.0)
        row[label] = {
            "energy_initial": r["energy_initial"],
            "energy_t0_rel_diff": abs(r["energy_initial"] - e_mj) / abs(e_mj),
            "bobs_t0_max_diff": float(np.max(np.abs(r["x0"] - x))),
            "bobs_t1_max_diff": float(np.max(np.abs(r["x"] - mj["x"]))),
        }
    row["mujoco"] = {
        "energy_initial_point_masses": e_mj,
        "energy_initial_mujoco": e_mj_own,
        "velocity_t0_max_diff": float(np.max(np.abs(v - v_exact))),
        "inertia": link_inertia(n),
        "bobs_t1_inertia_10x_diff": float(np.max(np.abs(mj_more_inertia["x"] - mj["x"]))),
    }
    return row


def per_step(exe, sizes, reps, steps, h, derive_budget, orders):
    """Per-step times of every tool and scheme at each N (one interleaved run)."""
    rows = []
    director_ok = True
    for n in sizes:
        row = {"N": n, "h": h, "steps": steps}
        for integ in MJ_INTEGRATORS:
            t, diverged, err = mj_step_time(n, integ, h, steps, reps)
            row[f"mujoco_{integ}"] = {
                "us_per_step": t * 1e6,
                "diverged": diverged,
                "energy_error_end": err,
            }
        for label, model, scheme, order in hamel_rows(orders):
            if model == DIRECTOR and not director_ok:
                row[label] = {"skipped": f"derivation > {derive_budget:g} s at a smaller N"}
                continue
            row[label] = hamel_timing(exe, model, scheme, n, h, steps, reps, derive_budget, order)
            if "skipped" in row[label] and model == DIRECTOR:
                director_ok = False
        rows.append(row)
        print(
            f"  N = {n}: "
            + ", ".join(f"{k} {fmt_cell_step(v)}" for k, v in row.items() if isinstance(v, dict)),
            flush=True,
        )
    return rows


def hamel_rows(orders):
    """(label, model, scheme, order) of every hamel row, composed orders included."""
    rows = [(label, model, scheme, None) for label, model, scheme in HAMEL_SCHEMES]
    for order in orders:
        rows += [
            (f"{label}_o{order}", model, scheme, order)
            for label, model, scheme in HAMEL_SCHEMES[:1]
        ]
    return rows


def hamel_timing(exe, model, scheme, n, h, steps, reps, budget, order):
    """Median ns/step and wall time of `hamel simulate` over up to `reps` runs.

    A run longer than 30 s is not repeated; one longer than `budget` is
    stopped and the size reported as skipped.
    """
    runs = []
    for rep in range(reps):
        # The first run derives and compiles (`--no-cache`), as a model's
        # first run at a size does; the others read both from the cache.
        r = hamel_run(exe, model, scheme, n, h, steps * h, timeout=budget, order=order, cold=rep == 0)
        if r.get("timeout"):
            return {"skipped": f"derivation > {budget:g} s"}
        if r.get("failed"):
            return {"failed": r["failed"]}
        runs.append(r)
        if r["wall_s"] > 30:
            break
    ns = statistics.median(r["ns_per_step"] for r in runs)
    err = runs[-1]["energy_error_end"]
    warm = runs[1:] or runs
    wall = statistics.median(r["wall_s"] for r in warm)
    return {
        "us_per_step": ns / 1e3,
        "energy_error_end": err,
        "wall_s": wall,
        "setup_s": wall - ns * 1e-9 * steps,
        "cold_wall_s": runs[0]["wall_s"],
        "cold_setup_s": runs[0]["wall_s"] - runs[0]["ns_per_step"] * 1e-9 * steps,
        "runs": len(runs),
    }


def reference(n, dt):
    """Bob positions at t = 10 s from MuJoCo RK4 at dt, checked against 2 dt.

    Also how far round-off carries the motion: the run at 2 dt repeated with
    gravity one ulp stronger, bobs compared every half second. The reference
    is trusted to a target where both its round-off spread and its
    discretization error stay below REFERENCE_SHARE of it. Where round-off
    alone passes that share of the tightest position target before t = 10,
    no double-precision run can be ranked against it at t = 10 (the motion
    is chaotic); positions are then also compared at the last half second at
    which a run at dt / 2 (checked against the one at dt) is trusted
    (`position_horizon`).
    """
    import numpy as np

    marks = [HORIZON_STEP * k for k in range(1, int(round(T_ACCURACY / HORIZON_STEP)) + 1)]
    coarse = mj_run(n, "rk4", 2 * dt, T_ACCURACY, samples=10, record=marks)
    nudged = mj_run(n, "rk4", 2 * dt, T_ACCURACY, samples=10, record=marks, nudge_g=True)
    growth = [(t, float(np.max(np.abs(coarse["x_at"][t] - nudged["x_at"][t])))) for t in marks]
    limit = REFERENCE_SHARE * min(POSITION_TARGETS)
    trusted = [t for t, _ in growth[: next((k for k, (_, d) in enumerate(growth) if d > limit), None)]]
    fine = mj_run(n, "rk4", dt, T_ACCURACY, samples=10, record=marks)
    diff = float(np.max(np.abs(fine["x"] - coarse["x"])))
    ref = {
        "dt": dt,
        "diff_vs_2dt": diff,
        "error_estimate": diff / 15,
        "energy_error": fine["energy_error"],
        "stepping_s": fine["stepping_s"],
        "roundoff_growth": growth,
        "position_horizon": T_ACCURACY,
    }
    x_horizon = fine["x"]
    if trusted and trusted[-1] < T_ACCURACY:
        finer = mj_run(n, "rk4", dt / 2, trusted[-1], samples=10, record=trusted)
        error = {t: float(np.max(np.abs(finer["x_at"][t] - fine["x_at"][t]))) / 15 for t in trusted}
        horizon = max((t for t in trusted if error[t] <= limit), default=trusted[0])
        x_horizon = finer["x_at"][horizon]
        ref.update(
            position_horizon=horizon, horizon_dt=dt / 2, horizon_error_estimate=error[horizon]
        )
    return fine["x"], x_horizon, ref


def ladder_mujoco(n, integ, ladder, x_ref, run_budget, t_end=T_ACCURACY):
    """Accuracy and time of MuJoCo `integ` at every dt of the ladder.

    A run shorter than T_ACCURACY (`t_end`, the position horizon) measures
    positions only: its energy error is not one over 10 s.
    """
    import numpy as np

    rungs, predicted = [], 0.0
    for dt in ladder:
        if predicted > run_budget:
            rungs.append({"h": dt, "skipped": "over the run budget"})
            continue
        r = mj_run(n, integ, dt, t_end)
        predicted = 2 * r["stepping_s"] + r["build_s"]
        rung = {"h": dt, "stepping_s": r["stepping_s"], "wall_s": r["stepping_s"] + r["build_s"]}
        if r["diverged"]:
            rung["diverged"] = True
        else:
            if t_end == T_ACCURACY:
                rung["energy_error"] = r["energy_error"]
            rung["position_error"] = float(np.max(np.abs(r["x"] - x_ref)))
        rungs.append(rung)
        if all_met(rungs, energy=t_end == T_ACCURACY):
            break
    return rungs


def ladder_hamel(
    exe, model, scheme, n, ladder, x_ref, run_budget, setup, order=None, t_end=T_ACCURACY
):
    """Accuracy and time of `hamel simulate` at every h of the ladder.

    A rung is skipped when the previous one predicts (its cost beyond
    `setup`, the command's fixed cost, doubled) that it exceeds the budget.
    """
    import numpy as np

    rungs, predicted = [], 0.0
    for h in ladder:
        if predicted > run_budget:
            rungs.append({"h": h, "skipped": "over the run budget"})
            continue
        r = hamel_run(
            exe,
            model,
            scheme,
            n,
            h,
            t_end,
            timeout=max(run_budget * 1.5, setup * 2),
            order=order,
        )
        if r.get("timeout"):
            rungs.append({"h": h, "skipped": "over the run budget"})
            predicted = math.inf
            continue
        predicted = setup + 2 * max(r["wall_s"] - setup, 0.0)
        rung = {"h": h, "wall_s": r["wall_s"]}
        if r.get("failed"):
            rung["failed"] = r["failed"]
        else:
            rung["stepping_s"] = r["stepping_s"]
            if t_end == T_ACCURACY:
                rung["energy_error"] = r["energy_error"]
            rung["position_error"] = float(np.max(np.abs(r["x"] - x_ref)))
            rung["x"] = r["x"]  # for the Richardson check; not saved
        rungs.append(rung)
        if all_met(rungs, energy=t_end == T_ACCURACY):
            break
    return rungs


def all_met(rungs, energy=True):
    """True once some rung meets the tightest position target and, with
    `energy`, the tightest energy target."""
    ok = [r for r in rungs if "position_error" in r]
    return (
        not energy or any(r.get("energy_error", math.inf) <= min(ENERGY_TARGETS) for r in ok)
    ) and any(r["position_error"] <= min(POSITION_TARGETS) for r in ok)


def accuracy(exe, sizes, ladder, ref_dt, run_budget, per_step_rows, orders):
    """Time-to-accuracy ladders of every tool and scheme at each N.

    The per-step rows give each hamel command's fixed cost (derivation, JIT)
    and which sizes the director chain's derivation budget admits.
    """
    out = []
    costs = {row["N"]: row for row in per_step_rows}
    for n in sizes:
        t0 = time.perf_counter()
        x_ref, x_horizon, ref = reference(n, ref_dt)
        entry = {"N": n, "reference": ref}
        entry["ladders"] = ladders(exe, n, ladder, x_ref, run_budget, costs, orders)
        # Cross-check of the reference: RATTLE's two finest rungs, Richardson
        # extrapolated (RATTLE is symmetric: its error is even in h).
        entry["reference"]["rattle_richardson_diff"] = richardson_check(
            entry["ladders"]["rattle"], x_ref
        )
        horizon = ref["position_horizon"]
        if horizon < T_ACCURACY:
            entry["horizon_ladders"] = ladders(
                exe, n, ladder, x_horizon, run_budget, costs, orders, t_end=horizon
            )
        for group in ("ladders", "horizon_ladders"):
            for rungs in entry.get(group, {}).values():
                for r in rungs:
                    r.pop("x", None)
        entry["seconds"] = time.perf_counter() - t0
        out.append(entry)
        print(f"  N = {n}: {entry['seconds']:.0f} s, reference {ref}", flush=True)
    return out


def ladders(exe, n, ladder, x_ref, run_budget, costs, orders, t_end=T_ACCURACY):
    """The ladder of every MuJoCo integrator and hamel row at size n, runs to t_end."""
    out = {}
    for integ in MJ_INTEGRATORS:
        out[f"mujoco_{integ}"] = ladder_mujoco(n, integ, ladder, x_ref, run_budget, t_end)
    for label, model, scheme, order in hamel_rows(orders):
        cost = costs.get(n, {}).get(label, {"setup_s": 0.0})
        if "setup_s" not in cost:
            out[label] = [{"skipped": cost.get("skipped", "failed in the per-step run")}]
            continue
        out[label] = ladder_hamel(
            exe, model, scheme, n, ladder, x_ref, run_budget, cost["setup_s"], order, t_end
        )
    return out


def richardson_check(rungs, x_ref):
    """RATTLE's two finest rungs, Richardson-extrapolated, against the reference.

    RATTLE is symmetric, so its error is even in h: with r = h_c / h_f,
    (r^2 x_f - x_c) / (r^2 - 1) is accurate to O(h^4).
    """
    import numpy as np

    done = [r for r in rungs if "x" in r]
    if len(done) < 2:
        return None
    coarse, fine = done[-2], done[-1]
    r2 = (coarse["h"] / fine["h"]) ** 2
    extrapolated = (r2 * fine["x"] - coarse["x"]) / (r2 - 1)
    return {
        "h_coarse": coarse["h"],
        "h_fine": fine["h"],
        "diff": float(np.max(np.abs(extrapolated - x_ref))),
        "rattle_fine_error": fine["position_error"],
    }


# ---------------------------------------------------------------- tables


def fmt(x, digits=2):
    """A number in a table cell: 3 significant digits, thousands separated."""
    if x >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}" if x < 10 else f"{x:.3g}"


def fmt_cell_step(cell):
    """Per-step table cell: µs per step (and the whole command for hamel)."""
    if "skipped" in cell:
        return "skipped: " + cell["skipped"]
    if "failed" in cell:
        return "failed"
    s = fmt(cell["us_per_step"], 3)
    notes = []
    if cell.get("diverged"):
        notes.append("diverges")
    elif "energy_error_end" in cell:
        notes.append(f"ΔE {cell['energy_error_end']:.0e}")
    if cell.get("runs") == 1 and "cold_wall_s" in cell:
        # A first run over 30 s is not repeated: no cached run was timed.
        notes.append(f"first run {cell['cold_wall_s']:.2f} s, not repeated")
    else:
        if "wall_s" in cell:
            notes.append(f"{cell['wall_s']:.2f} s")
        if "cold_wall_s" in cell:
            notes.append(f"first run {cell['cold_wall_s']:.2f} s")
    return s + (f" ({'; '.join(notes)})" if notes else "")


def best_rung(rungs, key, target, clock):
    """The rung of least `clock` time meeting `key` <= target, or None."""
    met = [r for r in rungs if key in r and r[key] <= target]
    return min(met, key=lambda r: r[clock]) if met else None


def best_time(rungs, key, target, clock):
    """Least `clock` time over the rungs meeting `key` <= target, as a cell."""
    r = best_rung(rungs, key, target, clock)
    if r:
        return f"{fmt(r[clock], 2)} s (h {r['h']:g})"
    errs = [r for r in rungs if key in r]
    diverged = [r["h"] for r in rungs if r.get("diverged")]
    if not errs and diverged:
        return f"diverges at every h run ({max(diverged):g} … {min(diverged):g})"
    if not errs:
        why = next((r.get("skipped") for r in rungs if "skipped" in r), "no run")
        return "—" if why is None else why.replace("over the run budget", "—")
    r = min(errs, key=lambda r: r[key])
    failed = [f"{f['h']:g}" for f in rungs if "failed" in f]
    why = f"; failed at h {', '.join(failed)}" if failed else ""
    return f"not reached ({fmt(r[key], 2)} at h {r['h']:g}{why})"


def failures(results):
    """Sentences naming the hamel runs that stopped with an error, and why."""
    seen = {}
    for entry in results.get("accuracy", []):
        for label, rungs in entry["ladders"].items():
            for r in rungs:
                if "failed" in r:
                    msg = " ".join(r["failed"]).removeprefix("error: ")
                    msg = msg.split(": the step equations")[0]
                    seen.setdefault((label, msg), []).append(f"N = {entry['N']}, h = {r['h']:g}")
    return [
        f"{column_name(label)} stopped at {'; '.join(where)}: {msg}."
        for (label, msg), where in seen.items()
    ]


def table_per_step(results):
    """Markdown table of the per-step measurements."""
    rows = results["per_step"]
    labels = [k for k in rows[0] if isinstance(rows[0][k], dict)]
    head = "| N | " + " | ".join(column_name(k) for k in labels) + " |"
    lines = [head, "|" + "---|" * (len(labels) + 1)]
    for row in rows:
        lines.append(f"| {row['N']} | " + " | ".join(fmt_cell_step(row[k]) for k in labels) + " |")
    return "\n".join(lines)


def column_name(label):
    """Human name of a tool/scheme label."""
    names = {
        "mujoco_euler": "MuJoCo Euler",
        "mujoco_implicitfast": "MuJoCo implicitfast",
        "mujoco_rk4": "MuJoCo RK4",
        "rattle": "hamel `rattle`",
        "energy_momentum": "hamel `energy_momentum`",
        "hamel": "hamel director `hamel`",
    }
    if "_o" in label and label.split("_o")[0] in names:
        base, order = label.rsplit("_o", 1)
        return f"{names[base]} order {order}"
    return names.get(label, label)


def winner(ladders, key, target, clock):
    """Which tool reaches the target first, and by what factor over the other."""
    best = {}
    for label, rungs in ladders.items():
        if key == "energy_error" and label.startswith("energy_momentum"):
            continue  # conserves energy by construction: no accuracy measure
        tool = "MuJoCo" if label.startswith("mujoco") else "hamel"
        r = best_rung(rungs, key, target, clock)
        if r and (tool not in best or r[clock] < best[tool][1]):
            best[tool] = (label, r[clock])
    if not best:
        return "neither"
    tool, (label, t) = min(best.items(), key=lambda kv: kv[1][1])
    other = "hamel" if tool == "MuJoCo" else "MuJoCo"
    if other not in best:
        return f"{column_name(label)} ({other}: not reached)"
    return f"{column_name(label)}, {best[other][1] / t:.1f}× ahead of {other}"


def table_accuracy(results, clock):
    """Markdown table of the time to each target (`clock`: wall_s or stepping_s)."""
    entries = results["accuracy"]
    labels = list(entries[0]["ladders"])
    lines = [
        "| N | target | "
        + " | ".join(column_name(k) for k in labels)
        + " | first there (energy: not counting `energy_momentum`) |"
    ]
    lines.append("|" + "---|" * (len(labels) + 3))
    targets = [("energy_error", t, f"energy {t:g}") for t in ENERGY_TARGETS]
    targets += [("position_error", t, f"position {t:g} at t = 10") for t in POSITION_TARGETS]
    for entry in entries:
        for key, target, name in targets:
            lines.append(accuracy_row(entry, labels, key, target, name, clock))
        horizon = entry["reference"].get("position_horizon", T_ACCURACY)
        if horizon < T_ACCURACY:
            for target in POSITION_TARGETS:
                name = f"position {target:g} at t = {horizon:g} (horizon)"
                lines.append(
                    accuracy_row(entry, labels, "position_error", target, name, clock, horizon)
                )
    return "\n".join(lines)


def accuracy_row(entry, labels, key, target, name, clock, horizon=None):
    """One Markdown row of the time-to-accuracy table (`horizon`: the
    position row at the shorter horizon, from its own ladders)."""
    ref = entry["reference"]
    ladders = entry["horizon_ladders"] if horizon else entry["ladders"]
    ref_error = ref["horizon_error_estimate"] if horizon else ref["error_estimate"]
    blurred = key == "position_error" and not horizon and roundoff_max(ref) > REFERENCE_SHARE * target
    if blurred:
        # Chaos: round-off alone carries the bobs past the target by t = 10.
        void = (
            f"beyond double precision: gravity one ulp stronger moves the bobs by up to "
            f"{fmt(roundoff_max(ref))} by t = 10"
            + (" (see the horizon rows)" if ref["position_horizon"] < T_ACCURACY else "")
        )
        cells = ["—"] * len(labels) + [void]
    elif key == "position_error" and ref_error > REFERENCE_SHARE * target:
        void = f"reference not converged (±{fmt(ref_error)})"
        cells = ["—"] * len(labels) + [void]
    else:
        cells = [best_time(ladders[k], key, target, clock) for k in labels]
        cells.append(winner(ladders, key, target, clock))
    return f"| {entry['N']} | {name} | " + " | ".join(cells) + " |"


def roundoff_max(ref):
    """How far a one-ulp change of gravity moves the bobs by t = 10, at most
    (0 when not measured)."""
    return max((d for _, d in ref.get("roundoff_growth", [])), default=0.0)


def table_verify(results):
    """Markdown table of the equality checks."""
    lines = [
        "| N | h | energy at t = 0, rel. diff. (RATTLE / director) | bobs at t = 1 s, max diff. vs MuJoCo RK4 (RATTLE / director) | MuJoCo link inertia I | MuJoCo bobs at t = 1 s, I vs 10 I |",
        "|---|---|---|---|---|---|",
    ]
    for row in results["verify"]:
        r, dch = row["rattle"], row.get("hamel")
        e = fmt(r["energy_t0_rel_diff"]) + (" / " + fmt(dch["energy_t0_rel_diff"]) if dch else "")
        x = fmt(r["bobs_t1_max_diff"]) + (" / " + fmt(dch["bobs_t1_max_diff"]) if dch else "")
        lines.append(
            f"| {row['N']} | {row['h']:g} | {e} | {x} | {row['mujoco']['inertia']:g} | {fmt(row['mujoco']['bobs_t1_inertia_10x_diff'])} |"
        )
    return "\n".join(lines)


def ratios(results, num, den):
    """Per-step time ratios num / den over the sizes where both ran, by N."""
    out = {}
    for row in results["per_step"]:
        a, b = row.get(num, {}), row.get(den, {})
        if "us_per_step" in a and "us_per_step" in b:
            out[row["N"]] = a["us_per_step"] / b["us_per_step"]
    return out


def ratio_text(r):
    """'2.1× (N = 4) … 5.3× (N = 128)' of a ratio dictionary."""
    return ", ".join(f"{v:.1f}× (N = {n})" for n, v in r.items())


def render_summary(results):
    """Generated sentences saying where each tool is faster per step."""
    return (
        "Per step, MuJoCo Euler / hamel RATTLE: "
        + ratio_text(ratios(results, "mujoco_euler", "rattle"))
        + ". MuJoCo RK4 / hamel RATTLE: "
        + ratio_text(ratios(results, "mujoco_rk4", "rattle"))
        + ". hamel director / MuJoCo Euler: "
        + ratio_text(ratios(results, "hamel", "mujoco_euler"))
        + "."
    )


def render(results):
    """The Markdown the README shows between its markers."""
    meta = results["meta"]
    parts = [
        f"Measured {meta['date']} on {meta['machine']} (load average {meta['load_average']}), "
        f"MuJoCo {meta['mujoco']}, {meta['hamel']}, Python {meta['python']}; "
        f"mode `{meta['mode']}`, script run {meta['minutes']:.1f} min"
        + (
            f" (verification and per-step rows from its `{meta['per_step_from']['mode']}` run of "
            f"{meta['per_step_from']['date']}, {meta['per_step_from']['minutes']:.1f} min, "
            f"load average {meta['per_step_from']['load_average']})"
            if "per_step_from" in meta
            else ""
        )
        + (
            f" (time-to-accuracy ladders from its `{meta['accuracy_from']['mode']}` run of "
            f"{meta['accuracy_from']['date']}, {meta['accuracy_from']['minutes']:.1f} min, "
            f"load average {meta['accuracy_from']['load_average']}, with the hamel of that day)"
            if "accuracy_from" in meta
            else ""
        )
        + ".",
        "",
        "Equality of the two chains (MuJoCo RK4 and hamel at the same small step):",
        "",
        table_verify(results),
        "",
        f"µs per step (h = dt = {results['per_step'][0]['h']:g}, {results['per_step'][0]['steps']} steps, "
        "medians; hamel's `ns_per_step` of stepping; in parentheses the relative energy error "
        "ΔE at the end of the run, and for hamel the whole `hamel simulate` command's wall "
        + (
            "time: start, reading the derivation and machine code an earlier run kept in the "
            "cache, run, output; then the first run's, which derives and compiles them):"
            if cached(results)
            else "time: start, derivation, JIT, run, output):"
        ),
        "",
        table_per_step(results),
        "",
        render_summary(results),
    ]
    if results.get("accuracy"):
        ref = "; ".join(
            f"N = {e['N']}: MuJoCo RK4 dt = {e['reference']['dt']:g}, "
            f"{fmt(e['reference']['error_estimate'])} estimated error, RATTLE "
            f"Richardson-extrapolated {richardson_text(e['reference'].get('rattle_richardson_diff'))}"
            + horizon_text(e["reference"])
            for e in results["accuracy"]
        )
        parts += [
            "",
            "Time to accuracy over 10 s, whole run (hamel: the `hamel simulate` command's wall "
            "time"
            + (
                ", its derivation and machine code read from the cache, as on any run after the "
                "first of a model at a size (the first run's extra cost is in the per-step table)"
                if cached(results)
                else ""
            )
            + "; MuJoCo: model compile and stepping, not Python's start and `import mujoco`"
            + (
                f", {results['meta']['mujoco_import_s']:.2f} s"
                if "mujoco_import_s" in results["meta"]
                else ""
            )
            + "); "
            "in parentheses the step size that achieves it. Reference positions: " + ref + ".",
            "",
            table_accuracy(results, "wall_s"),
            "",
            "The same, stepping only:",
            "",
            table_accuracy(results, "stepping_s"),
        ]
        stops = failures(results)
        if stops:
            parts += [
                "",
                "Runs that stopped with an error (hamel's defaults: Newton tolerance machine epsilon, at most 30 iterations): "
                + " ".join(stops),
            ]
    return "\n".join(parts)


def cached(results):
    """Whether hamel's runs read their derivations from its cache (hamel
    builds that keep them report each size's first, cold run apart)."""
    return any(
        isinstance(cell, dict) and "cold_wall_s" in cell
        for row in results["per_step"]
        for cell in row.values()
    )


def horizon_text(ref):
    """Words for how far round-off carries the motion, and the horizon."""
    growth = ref.get("roundoff_growth")
    if not growth:
        return ""
    text = (
        f"; round-off (gravity one ulp stronger) moves the bobs by up to "
        f"{fmt(roundoff_max(ref))} by t = 10"
    )
    horizon = ref["position_horizon"]
    if horizon < T_ACCURACY:
        at = dict(growth)[horizon]
        text += (
            f", by {fmt(at)} at t = {horizon:g}, the horizon of the position rows "
            f"(reference there MuJoCo RK4 dt = {ref['horizon_dt']:g}, "
            f"±{fmt(ref['horizon_error_estimate'])})"
        )
    return text


def richardson_text(r):
    """Words for the RATTLE cross-check of the reference."""
    if not r:
        return "not run"
    return (
        f"from h = {r['h_coarse']:g} and {r['h_fine']:g} within {fmt(r['diff'])} of it "
        f"(RATTLE at {r['h_fine']:g}: {fmt(r['rattle_fine_error'])})"
    )


def readme_section(text):
    """The README text between the peer-benchmark markers."""
    start = text.index(BEGIN) + len(BEGIN)
    return text[start : text.index(END)].strip("\n")


def write_readme(results):
    """Replace the README's section between the markers by `render(results)`."""
    text = README.read_text()
    start = text.index(BEGIN) + len(BEGIN)
    end = text.index(END)
    README.write_text(text[:start] + "\n" + render(results) + "\n" + text[end:])


# ---------------------------------------------------------------- main


def meta(exe, mode, orders):
    """Machine, date and versions of the run."""
    import mujoco

    cpu = "unknown CPU"
    try:
        cpu = next(
            l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    return {
        "date": datetime.date.today().isoformat(),
        "machine": f"{cpu}, {os.cpu_count()} cores, {platform.system()}",
        "load_average": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        "mujoco": mujoco.__version__,
        "hamel": hamel_version(exe),
        "python": platform.python_version(),
        "mujoco_import_s": import_time(),
        "mode": mode,
        "orders": list(orders),
    }


def import_time():
    """Wall seconds of a fresh Python that imports mujoco (not in MuJoCo's times)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mujoco"], check=True)
    return time.perf_counter() - t0


def parse():
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick",
        action="store_true",
        help="N <= 32, fewer repetitions, N = 16 accuracy only (~3 min)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="time to accuracy at N = 16, 32, 64 and a finer ladder (~1 h)",
    )
    p.add_argument("--hamel", help="path of the hamel command")
    p.add_argument("--reps", type=int, help="repetitions of each per-step timing")
    p.add_argument(
        "--derive-budget",
        type=float,
        default=120.0,
        help="seconds a director-chain run may take (derivation)",
    )
    p.add_argument("--run-budget", type=float, help="seconds one ladder run may take")
    p.add_argument("--sizes", type=int, nargs="+", help="override the per-step sizes N")
    p.add_argument("--acc-sizes", type=int, nargs="+", help="override the time-to-accuracy sizes N")
    p.add_argument(
        "--per-step-from",
        type=Path,
        help="reuse the per-step rows (and verification) of this results file",
    )
    p.add_argument(
        "--accuracy-from",
        type=Path,
        help="reuse the time-to-accuracy ladders of this results file (measure the rest)",
    )
    p.add_argument(
        "--out", type=Path, default=RESULTS, help="results JSON (default bench/peer/results.json)"
    )
    p.add_argument(
        "--render", action="store_true", help="print the tables of --out; measure nothing"
    )
    p.add_argument("--write-readme", action="store_true", help="put the tables into README.md")
    return p.parse_args()


def plan(args):
    """Sizes, ladders and budgets of the chosen mode, with the overrides."""
    cfg = mode_plan(args)
    if args.sizes:
        cfg["sizes"] = args.sizes
    if args.acc_sizes:
        cfg["acc"] = args.acc_sizes
    return cfg


def mode_plan(args):
    """Sizes, ladders and budgets of --quick, the default and --full."""
    if args.quick:
        return dict(
            mode="quick",
            verify=[4],
            sizes=[4, 8, 16, 32],
            reps=args.reps or 3,
            acc=[16],
            ladder=[4e-2, 2e-2, 1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2.5e-4],
            ref_dt=5e-5,
            run_budget=args.run_budget or 10,
        )
    if args.full:
        return dict(
            mode="full",
            verify=[4, 16],
            sizes=[4, 8, 16, 32, 64, 128],
            reps=args.reps or 5,
            acc=[16, 32, 64],
            ladder=[4e-2, 2e-2, 1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2.5e-4, 1.25e-4, 6.25e-5],
            ref_dt=5e-5,
            run_budget=args.run_budget or 200,
        )
    return dict(
        mode="default",
        verify=[4, 16],
        sizes=[4, 8, 16, 32, 64, 128],
        reps=args.reps or 5,
        acc=[16, 32],
        ladder=[4e-2, 2e-2, 1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2.5e-4, 1.25e-4],
        ref_dt=5e-5,
        run_budget=args.run_budget or 40,
    )


def main():
    """Measure (or only render) and print the tables."""
    args = parse()
    if args.render:
        results = json.loads(args.out.read_text())
    else:
        results = measure(args)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(render(results))
    if args.write_readme:
        write_readme(results)


def measure(args):
    """Every measurement of the chosen mode, as the results dictionary."""
    import importlib.util

    missing = [m for m in ("mujoco", "numpy") if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(f"missing {', '.join(missing)}: pip install mujoco numpy")
    exe = find_hamel(args.hamel)
    # hamel keeps derivations and machine code between runs: start from an
    # empty cache so that every first run is measured cold.
    os.environ["HAMEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="peer-cache-")
    cfg = plan(args)
    orders = ORDERS if hamel_supports_order(exe) else ()
    t0 = time.perf_counter()
    results = {"meta": meta(exe, cfg["mode"], orders), "plan": {k: v for k, v in cfg.items()}}
    if args.per_step_from:
        old = json.loads(args.per_step_from.read_text())
        results["verify"], results["per_step"] = old["verify"], old["per_step"]
        origin = old["meta"].get("per_step_from", old["meta"])
        results["meta"]["per_step_from"] = {
            k: origin[k] for k in ("date", "mode", "load_average", "minutes")
        }
    else:
        print("verify", flush=True)
        results["verify"] = [verify(exe, n, 1e-4) for n in cfg["verify"]]
        print("per step", flush=True)
        results["per_step"] = per_step(
            exe, cfg["sizes"], cfg["reps"], 1000, 1e-3, args.derive_budget, orders
        )
    if args.accuracy_from:
        old = json.loads(args.accuracy_from.read_text())
        results["accuracy"] = old["accuracy"]
        # The run that measured the ladders: a file that reused them names
        # it in its own `accuracy_from` (its own meta is the reusing run's).
        origin = old["meta"].get("accuracy_from", old["meta"])
        results["meta"]["accuracy_from"] = {
            k: origin[k] for k in ("date", "mode", "load_average", "minutes")
        }
        results["meta"]["minutes"] = (time.perf_counter() - t0) / 60
        return results
    print("time to accuracy", flush=True)
    results["accuracy"] = accuracy(
        exe,
        cfg["acc"],
        cfg["ladder"],
        cfg["ref_dt"],
        cfg["run_budget"],
        results["per_step"],
        orders,
    )
    results["meta"]["minutes"] = (time.perf_counter() - t0) / 60
    return results


if __name__ == "__main__":
    main()
