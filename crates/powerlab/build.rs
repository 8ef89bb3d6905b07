#![allow(missing_docs)]
// Records the git revision of the build for run manifests.
fn main() {
    let rev = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let rev = format!("{rev}{}", if dirty { "-dirty" } else { "" });
    println!("cargo:rustc-env=POWERLAB_GIT_REV={rev}");
    // The CUDA major this build's driver API bindings target: the cudarc
    // feature `cuda-NN000` pinned in the workspace manifest.
    let manifest = std::fs::read_to_string("../../Cargo.toml").unwrap_or_default();
    let cuda = manifest
        .split("\"cuda-")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|v| v.parse::<u32>().ok())
        .map(|v| (v / 1000).to_string())
        .unwrap_or_else(|| "unknown".into());
    let mut features = Vec::new();
    if std::env::var_os("CARGO_FEATURE_MPI").is_some() {
        features.push("mpi");
    }
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(",")
    };
    let target = std::env::var("TARGET").unwrap_or_default();
    println!(
        "cargo:rustc-env=POWERLAB_LONG_VERSION={} (git {rev}, CUDA {cuda}, features: {features}, {target})",
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default()
    );
    println!("cargo:rerun-if-changed=../../Cargo.toml");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
}
