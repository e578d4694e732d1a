//! Tells the emitter whether the compiler that builds it (and so the crates
//! whose derives it expands) accepts AVX-512 target features, which Rust
//! stabilized in 1.89; older compilers get the AVX2 and baseline copies only.

use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(hamel_avx512)");
    println!("cargo::rerun-if-env-changed=RUSTC");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let minor = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_owned))
        .and_then(|v| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()));
    if minor.is_some_and(|m| m >= 89) {
        println!("cargo::rustc-cfg=hamel_avx512");
    }
}
