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
# Optimized, as users install it. (`--profile test` makes `cargo rustc` build
# the extension as a test harness, which Python cannot load; the dev profile
# built in 136 s and then ran pytest in 44 s against about 200 s and 10 s.)
target/venv/bin/python -m pip install -q "./python[test,dask]"
target/venv/bin/python -m pytest -q python/tests
