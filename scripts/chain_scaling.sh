#!/usr/bin/env bash
# Scaling study for n-link chains (issue: chains). For each N: symbolic derivation
# and emission time, generated size and operation counts (from the compiler),
# release compile time of a crate that derives the chain, and time per step.
# Usage: [SENS=1] [MODEL=spherical_chain_cartesian SCHEME=rattle] scripts/chain_scaling.sh [N ...]
# (default: 1 2 4 8 16 on spherical_chain with hamel; SENS=1 also emits the
# step-map sensitivity, `sensitivity = true` in the derive)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 2 4 8 16)
sens=false
[ "${SENS:-0}" = "1" ] && sens=true
model=${MODEL:-spherical_chain}
scheme=${SCHEME:-hamel}
export MODEL=$model SCHEME=$scheme
cargo build --release -q --example chain_stats
tgt=${CARGO_TARGET_DIR:-target}
printf '%4s %12s %10s %10s %10s %12s %12s %10s\n' N derive_ms lines ops_tree ops_dag compile_s ns_per_step newton
f=examples/chain_scaling_tmp.rs
# The crate written for each size goes, whatever happens to the run.
trap 'rm -f "$f"' EXIT
for n in "${sizes[@]}"; do
  stats=$("$tgt"/release/examples/chain_stats "$n")
  cat > "$f" <<RS
use hamel::Integrator;
#[derive(Integrator)]
#[hamel(model = "models/$model.hamel", scheme = "$scheme", sensitivity = $sens, N = $n)]
pub struct Chain { pub m: f64, pub l: f64, pub g: f64 }
fn main() {
    let c = Chain::with_defaults();
    let start = c.initial("tilted").unwrap();
    let mut best = f64::INFINITY;
    let mut iters = 0.0;
    for _ in 0..5 {
        // A step of many unknowns is sized at run time (DynState, not Copy).
        let mut s = start.clone();
        let mut st = c.stepper(0.001).unwrap();
        let t = std::time::Instant::now();
        for _ in 0..200 { st.step(&mut s).unwrap(); }
        best = best.min(t.elapsed().as_nanos() as f64 / 200.0);
        iters = st.stats.mean();
    }
    println!("{best:.0} {iters:.2}");
}
RS
  t0=$(date +%s.%N)
  cargo build --release -q --example chain_scaling_tmp
  t1=$(date +%s.%N)
  run=$("$tgt"/release/examples/chain_scaling_tmp)
  rm -f "$f"
  read -r dms lines tree dag <<<"$stats"
  read -r ns it <<<"$run"
  printf '%4s %12s %10s %10s %10s %12.1f %12s %10s\n' "$n" "$dms" "$lines" "$tree" "$dag" "$(echo "$t1 - $t0" | bc)" "$ns" "$it"
done
