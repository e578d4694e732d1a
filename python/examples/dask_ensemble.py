"""Fan an ensemble out with Dask: one task per chunk of members, each task
calling ``Model.simulate_many`` (every core of its worker), results gathered
in the members' order.

Here the cluster is a ``LocalCluster``; given the address of a real cluster
(``Client("tcp://scheduler:8786")``) the same code runs there, provided every
worker has the ``hamel`` package and the model file.

    python python/examples/dask_ensemble.py models/double_spherical_pendulum.hamel

Tasks return plain dicts and NumPy arrays (they travel between processes);
a member that failed comes back as its error message.
"""

import sys
import time

import numpy as np


def run_chunk(path, scheme, h, steps, init, params, threads=None):
    """Runs one chunk of members in this process; returns picklable results."""
    import hamel

    model = hamel.Model(path)
    runs = model.simulate_many(scheme, h=h, steps=steps, init=init, params=params, threads=threads)
    out = []
    for r in runs:
        if isinstance(r, Exception):
            out.append({"error": str(r)})
        else:
            out.append({"summary": r.summary, "q": r.q[-1].copy(), "v": r.v[-1].copy()})
    return out


def perturbations(n, seed=0):
    """Pattern I with the lower mass and the gravity perturbed by up to 1 %."""
    rng = np.random.default_rng(seed)
    return [
        {"m2": 3.5 * (1 + 0.01 * a), "g": 9.81 * (1 + 0.01 * b)}
        for a, b in rng.uniform(-1, 1, size=(n, 2))
    ]


def run_on_dask(client, path, scheme, h, steps, init, params, chunk=64, threads=None):
    """Submits one task per chunk of `params` and gathers the results in order.

    `threads`: Rust threads per task (default: every core of the worker's
    machine); with one single-threaded worker process per core, give 1.
    """
    chunks = [params[i : i + chunk] for i in range(0, len(params), chunk)]
    futures = [client.submit(run_chunk, path, scheme, h, steps, init, c, threads, pure=False) for c in chunks]
    return [r for part in client.gather(futures) for r in part]


def main(path="models/double_spherical_pendulum.hamel", n=1000, steps=1000):
    from dask.distributed import Client, LocalCluster

    params = perturbations(n)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster, Client(cluster) as client:
        t0 = time.perf_counter()
        results = run_on_dask(client, path, "hamel_averaged", 0.01, steps, "pattern_I", params, threads=1)
        wall = time.perf_counter() - t0
    failed = sum("error" in r for r in results)
    worst = max(r["summary"]["max_energy_error_rel"] for r in results if "error" not in r)
    print(f"{n} members on Dask: {wall:.2f} s, {failed} failed, worst relative energy error {worst:.2e}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
