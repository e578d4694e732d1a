//! `HAMEL_BUILD`: a hash of every source that decides what a derivation or
//! the JIT produces (the symbolic compiler, the kernel, the runtime's step
//! layout, the JIT, this crate) and of the locked dependency versions, so
//! that kept derivations and machine code are never read by another build.

use std::path::Path;

use hamel_kernel::hash::{fnv1a, FNV_OFFSET};

fn hash_tree(h: &mut u64, root: &Path, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            hash_tree(h, root, &p);
        } else if let Ok(bytes) = std::fs::read(&p) {
            // Relative, so that two checkouts of one tree hash alike.
            let name = p.strip_prefix(root).unwrap_or(&p);
            *h = fnv1a(*h, name.to_string_lossy().as_bytes());
            *h = fnv1a(*h, &(bytes.len() as u64).to_le_bytes());
            *h = fnv1a(*h, &bytes);
        }
    }
}

fn main() {
    // Read when the script runs, not when it is compiled: Cargo reuses one
    // compiled script for checkouts at other paths sharing a target
    // directory, and a path baked in would watch (and hash) another tree.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let here = Path::new(&manifest);
    let mut h = fnv1a(FNV_OFFSET, env!("CARGO_PKG_VERSION").as_bytes());
    for part in [
        "src",
        "../kernel/src",
        "../compiler/src",
        "../runtime/src",
        "../jit/src",
        "../Cargo.lock",
    ] {
        let p = here.join(part);
        println!("cargo:rerun-if-changed={}", p.display());
        if p.is_dir() {
            hash_tree(&mut h, here, &p);
        } else if let Ok(bytes) = std::fs::read(&p) {
            h = fnv1a(h, &bytes);
        }
    }
    println!("cargo:rustc-env=HAMEL_BUILD={h:016x}");
}
