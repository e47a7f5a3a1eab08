//! Stamps the library with what it was built from (see src/support/stamp.rs).

#[path = "src/support/stamp.rs"]
mod stamp;

fn main() {
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    for (_, path) in stamp::inputs(&root).unwrap_or_default() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-changed=src");
    let stamp = stamp::stamp(&root).expect("the sources are here");
    println!("cargo:rustc-env=PI_IDE_SOURCE_STAMP={stamp}");
}
