//! Compiler-side statistics of the n-link chain: `cargo run --release --example
//! chain_stats N` prints derivation+emission time (ms), generated lines,
//! operations as trees (no sharing) and after CSE (the DAG). Used by
//! `scripts/chain_scaling.sh`; `MODEL` (default `spherical_chain`) and `SCHEME`
//! (default `hamel`) choose the model file and the scheme; `HAMEL_DUMP=file`
//! writes the emitted code there.

use std::time::Instant;

use hamel_compiler::emit::integrator::{emit, Target};
use hamel_compiler::scheme::Scheme;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: i64 = std::env::args().nth(1).ok_or("usage: chain_stats N")?.parse()?;
    let path = format!(
        "models/{}.hamel",
        std::env::var("MODEL").unwrap_or_else(|_| "spherical_chain".into())
    );
    let scheme = std::env::var("SCHEME").unwrap_or_else(|_| "hamel_averaged".into());
    let src = std::fs::read_to_string(&path)?;
    let t0 = Instant::now();
    // N = 0: a model without sizes.
    let sizes: Vec<(String, i64)> = (n > 0).then(|| ("N".to_string(), n)).into_iter().collect();
    let model = hamel_compiler::model::load_with_sizes(&path, &src, &sizes)?;
    let t_load = t0.elapsed().as_secs_f64() * 1e3;
    let sys = Scheme::from_names(&scheme, None)?.derive(&model)?;
    let t_derive = t0.elapsed().as_secs_f64() * 1e3;
    let ident = proc_macro2::Ident::new("Chain", proc_macro2::Span::call_site());
    let sensitivity = std::env::var("SENS").is_ok_and(|v| v == "1");
    let target = Target {
        ident: &ident,
        model_path: &path,
        sensitivity,
        simd: true,
        order: 2,
    };
    let (tokens, stats) = emit(&sys, &target)?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let text = tokens.to_string();
    if let Ok(dump) = std::env::var("HAMEL_DUMP") {
        std::fs::write(dump, &text)?;
    }
    let lines = hamel_compiler::emit::rust::statements(&text);
    let roots: Vec<_> = sys
        .residual
        .iter()
        .chain(sys.jacobian.iter().flatten())
        .copied()
        .collect();
    let tree = sys.graph.tree_size(&roots);
    println!("{ms:.1} {lines} {tree} {}", stats.ops);
    if std::env::var("HAMEL_TIMINGS").is_ok() {
        eprintln!(
            "load {t_load:.1} ms, derive {:.1} ms, emit {:.1} ms",
            t_derive - t_load,
            ms - t_derive
        );
    }
    Ok(())
}
