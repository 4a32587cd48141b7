//! Names this build of candor for the sandbox's launcher: `CANDOR_BUILD`,
//! a hash of everything the binaries are built from (`src/`, the manifest,
//! the lock file, this script, the profile and the features). candor uses
//! the lean launcher beside it (`candor-sandbox`) only when that binary
//! says the same name, so a launcher left over from another build (`cargo
//! run` builds only `candor`) is never given a launch it may read
//! differently (`protocol/sandbox.md`, "The launcher").

// A build script speaks to cargo on stdout.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};

/// FNV-1a, 64 bits: enough to tell builds apart, and no dependency.
struct Fnv(u64);

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut inputs = vec![
        root.join("Cargo.toml"),
        root.join("Cargo.lock"),
        root.join("build.rs"),
    ];
    files(&root.join("src"), &mut inputs);
    inputs.sort();
    let mut hash = Fnv(0xcbf2_9ce4_8422_2325);
    for path in &inputs {
        let relative = path.strip_prefix(&root).unwrap_or(path);
        hash.write(relative.to_string_lossy().as_bytes());
        hash.write(&std::fs::read(path).unwrap_or_default());
    }
    let mut settings: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("CARGO_FEATURE_") || k == "PROFILE" || k == "TARGET")
        .collect();
    settings.sort();
    for (k, v) in settings {
        hash.write(k.as_bytes());
        hash.write(v.as_bytes());
    }
    println!("cargo:rustc-env=CANDOR_BUILD={:016x}", hash.0);
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
}
