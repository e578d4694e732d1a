//! What the command-line tests share: running the `hamel` binary from the
//! repository root, and a fresh scratch directory.
#![allow(dead_code)] // each test file uses what it needs

use std::path::PathBuf;
use std::process::Command;

/// Runs `hamel args…` from the repository root: exit code, stdout, stderr.
pub fn hamel(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hamel"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("the hamel binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A scratch directory for this process and `name`, emptied.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hamel-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// [`tmp`], created: an empty scratch directory that exists (model and input
/// files are written into it).
pub fn scratch(name: &str) -> PathBuf {
    let d = tmp(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}
