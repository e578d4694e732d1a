"""Measures what the Python package costs: per-step time of `simulate` from
Python against the CLI's, of a Python loop over `Stepper.step`, and the
ensemble speed-up of `simulate_many` on this machine's cores.

    python python/examples/measure.py        # from the repository root

Prints a table and, as its last line, one JSON object.
"""

import json
import os
import subprocess
import time

import numpy as np

import hamel

SPHERE = "models/spherical_pendulum.hamel"
DSP = "models/double_spherical_pendulum.hamel"


def best(f, repeat=5):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    out = {}
    m = hamel.Model(SPHERE)
    steps = 10_000
    run = m.simulate("hamel_averaged", h=0.2, steps=steps, init="published")
    out["published_max_energy_error_rel"] = run.summary["max_energy_error_rel"]
    # Whole call (recording every state into NumPy arrays, monitoring included).
    t = best(lambda: m.simulate("hamel_averaged", h=0.2, steps=steps, init="published"))
    out["python_simulate_ns_per_step"] = t / steps * 1e9
    out["python_simulate_stepping_ns_per_step"] = run.summary["ns_per_step"]
    cli = subprocess.run(
        ["cargo", "run", "-q", "--release", "-p", "hamel-cli", "--", "simulate", SPHERE, "--h", "0.2",
         "--steps", str(steps), "--no-plots", "--out", "target/measure-cli", "--force", "--summary", "json"],
        capture_output=True, text=True, check=True,
    )
    out["cli_stepping_ns_per_step"] = json.loads(cli.stdout.strip().splitlines()[-1])["ns_per_step"]
    s = m.stepper("hamel_averaged", 0.2)

    def loop():
        z = s.initial("published")
        for _ in range(steps):
            z = s.step(z)

    t = best(loop)
    out["python_step_loop_ns_per_step"] = t / steps * 1e9
    # Ensemble: Pattern I with the lower mass and gravity perturbed by up to 1 %.
    d = hamel.Model(DSP)
    rng = np.random.default_rng(0)
    params = [{"m2": 3.5 * (1 + 0.01 * a), "g": 9.81 * (1 + 0.01 * b)} for a, b in rng.uniform(-1, 1, (1000, 2))]
    kw = dict(h=0.01, steps=1000, init="pattern_I", params=params)
    d.simulate_many("hamel_averaged", threads=1, **{**kw, "params": params[:20]})  # compile and warm up
    one = best(lambda: d.simulate_many("hamel_averaged", threads=1, **kw), repeat=3)
    cores = os.cpu_count()
    every = best(lambda: d.simulate_many("hamel_averaged", **kw), repeat=3)
    runs = d.simulate_many("hamel_averaged", **kw)
    out["ensemble"] = {
        "members": len(params),
        "steps": 1000,
        "cores": cores,
        "one_thread_s": one,
        "all_cores_s": every,
        "speedup": one / every,
        "failed": sum(isinstance(r, Exception) for r in runs),
        "worst_energy_error_rel": max(r.summary["max_energy_error_rel"] for r in runs if not isinstance(r, Exception)),
    }
    rows = [
        ("published run, max relative energy error", f"{out['published_max_energy_error_rel']:.2e}"),
        ("simulate from Python, whole call, ns/step", f"{out['python_simulate_ns_per_step']:.0f}"),
        ("simulate from Python, stepping only, ns/step", f"{out['python_simulate_stepping_ns_per_step']:.0f}"),
        ("CLI simulate, stepping only, ns/step", f"{out['cli_stepping_ns_per_step']:.0f}"),
        ("Python loop over Stepper.step, ns/step", f"{out['python_step_loop_ns_per_step']:.0f}"),
        (f"ensemble 1000 × 1000 steps, 1 thread, s", f"{one:.2f}"),
        (f"ensemble 1000 × 1000 steps, {cores} cores, s", f"{every:.2f}"),
        ("ensemble speed-up", f"{one / every:.2f}"),
    ]
    for k, v in rows:
        print(f"{k:<50} {v:>10}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
