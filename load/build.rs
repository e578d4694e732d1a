//! `HAMEL_BUILD`: a hash of every source that decides what a derivation or
//! the JIT produces (the symbolic compiler, the kernel, the runtime's step
//! layout, the JIT, this crate) and of the locked dependency versions, so
//! that kept derivations and machine code are never read by another build.

use std::path::Path;

use hamel_kernel::hash::{fnv1a, FNV_OFFSET};

fn hash_tree(h: &mut u64, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            hash_tree(h, &p);
        } else if let Ok(bytes) = std::fs::read(&p) {
            *h = fnv1a(*h, p.to_string_lossy().as_bytes());
            *h = fnv1a(*h, &(bytes.len() as u64).to_le_bytes());
            *h = fnv1a(*h, &bytes);
        }
    }
}

fn main() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
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
            hash_tree(&mut h, &p);
        } else if let Ok(bytes) = std::fs::read(&p) {
            h = fnv1a(h, &bytes);
        }
    }
    println!("cargo:rustc-env=HAMEL_BUILD={h:016x}");
}
