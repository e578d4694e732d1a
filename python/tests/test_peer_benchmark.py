"""The README's peer-benchmark tables are exactly what bench/peer/results.json
renders to (bench/peer/chain.py), so the README cannot drift from the committed
measurements. MuJoCo is not needed: only the renderer runs."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "peer" / "chain.py"


def load_script():
    spec = importlib.util.spec_from_file_location("peer_chain", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_tables_are_rendered_from_the_committed_results():
    chain = load_script()
    results = json.loads(chain.RESULTS.read_text())
    readme = (ROOT / "README.md").read_text()
    assert chain.readme_section(readme) == chain.render(results).strip("\n"), (
        "README's peer-benchmark section differs from bench/peer/results.json: "
        "run `python3 bench/peer/chain.py --render --write-readme`"
    )


def test_results_cover_the_promised_measurements():
    chain = load_script()
    results = json.loads(chain.RESULTS.read_text())
    for field in ("date", "machine", "mujoco", "hamel", "python"):
        assert results["meta"][field]
    assert [row["N"] for row in results["per_step"]] == [4, 8, 16, 32, 64, 128]
    for row in results["verify"]:
        # Same system: energy at t = 0 to round-off, bobs after 1 s to the
        # schemes' error at h = 1e-4.
        assert row["rattle"]["energy_t0_rel_diff"] < 1e-14
        assert row["rattle"]["bobs_t1_max_diff"] < 1e-6
    tightest = min(chain.POSITION_TARGETS)
    horizons = {}
    for entry in results["accuracy"]:
        ref = entry["reference"]
        horizon = ref["position_horizon"]
        horizons[entry["N"]] = horizon
        growth = dict((t, d) for t, d in ref["roundoff_growth"])
        # Round-off (gravity one ulp stronger) stays below a tenth of the
        # tightest position target up to the horizon; a horizon before t = 10
        # is there because it passes it by t = 10.
        trusted = chain.REFERENCE_SHARE * tightest
        assert all(d <= trusted for t, d in growth.items() if t <= horizon)
        if horizon < chain.T_ACCURACY:
            assert max(growth.values()) > trusted
            # Positions are ranked at the horizon against a reference good to
            # a tenth of the target, by every tool running to it.
            assert ref["horizon_error_estimate"] <= trusted
            assert set(entry["horizon_ladders"]) == set(entry["ladders"])
        else:
            # Converged far beyond the tightest position target at t = 10,
            # and RATTLE's finest rungs, Richardson-extrapolated, agree.
            assert ref["error_estimate"] < tightest / 100
            check = ref.get("rattle_richardson_diff")
            if check:
                assert check["diff"] < tightest
    # At N = 16 positions are ranked at t = 10 (round-off moves the bobs by
    # some 1e-11 by then); at N = 64 the motion is chaotic enough that
    # round-off alone moves them past 1e-7 well before. At N = 32 it moves
    # them by about 1e-7 by t = 10: one ulp's growth there, a single sample
    # of a chaotic divergence, came out 7.2e-8 in one run and 1.7e-7 in the
    # next, so either horizon is right (the rule is checked above).
    assert horizons[16] == chain.T_ACCURACY
    assert horizons[64] < chain.T_ACCURACY
