#!/usr/bin/env bash
# Every test: the Rust workspace, then the Python package built into a venv
# (target/venv) and its pytest suite. Needs a Rust toolchain and Python >= 3.9
# with venv; pip fetches maturin, numpy, pytest and dask.
set -euo pipefail
cd "$(dirname "$0")/.."
# Examples are left out of the test build: clippy (`.ci/run`) checks them, and
# building them as well was minutes of rustc on the derives they share with
# the tests. Doc tests run on their own, as target selection drops them.
cargo test --workspace --lib --bins --tests
cargo test --workspace --doc
python3 -m venv target/venv
target/venv/bin/python -m pip install -q --upgrade pip
# Built with the `test` profile, the extension reuses the crates `cargo test`
# just built instead of building them all again optimized (minutes on two
# cores); the tests check results, not speed. `pip install ./python` as the
# README says builds it optimized.
MATURIN_PEP517_ARGS="--profile test" target/venv/bin/python -m pip install -q "./python[test,dask]"
target/venv/bin/python -m pytest -q python/tests
