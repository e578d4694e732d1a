#!/usr/bin/env bash
# Every test: the Rust workspace, then the Python package built into a venv
# (target/venv) and its pytest suite. Needs a Rust toolchain and Python >= 3.9
# with venv; pip fetches maturin, numpy, pytest and dask.
set -euo pipefail
cd "$(dirname "$0")/.."
# Examples are left out of the test build: clippy (`.ci/run`) checks them, and
# building them as well was minutes of rustc on the derives they share with
# the tests. Doc tests run on their own, as target selection drops them.
# The Python package is tested by pytest below (its crate has no Rust tests).
cargo test --workspace --exclude hamel-python --lib --bins --tests
cargo test --workspace --doc
python3 -m venv target/venv
target/venv/bin/python -m pip install -q --upgrade pip
# The extension in the dev profile, whose settings the tests' profile shares
# (Cargo.toml): it reuses the dependencies just built (cranelift, the
# compiler) instead of building them again optimized — 100 s instead of about
# 5 minutes, and pytest 15 s instead of 10 s. Users' `pip install ./python`
# builds it optimized; the code and its floating-point results are the same.
MATURIN_PEP517_ARGS="--profile dev" target/venv/bin/python -m pip install -q "./python[test,dask]"
target/venv/bin/python -m pytest -q python/tests
