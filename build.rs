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
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") && builds_for_a_glibc_with_relr() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,pack-relative-relocs");
    }
}

/// Relative relocations packed (DT_RELR): the loader reads 2 KiB of them instead of 60, and
/// those pages do not stay resident. A glibc older than 2.36 refuses such a library, so only
/// when the glibc building it is 2.36 or newer and it is built for this machine with its own
/// linker (a library built against this glibc needs it anyway). A linker of one's choosing
/// (the releases' cargo-zigbuild, which targets glibc 2.17) gets none.
fn builds_for_a_glibc_with_relr() -> bool {
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok()
        || std::env::var("CARGO_CFG_TARGET_ENV").as_deref() != Ok("gnu")
        || std::env::var_os("RUSTC_LINKER").is_some()
    {
        return false;
    }
    let Ok(out) = std::process::Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    // "glibc 2.36"
    let text = String::from_utf8_lossy(&out.stdout);
    let mut version = text.split_whitespace().nth(1).unwrap_or("").split('.');
    let major: u32 = version.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let minor: u32 = version.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    (major, minor) >= (2, 36)
}
