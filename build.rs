//! Links the `critic` binary as a position-dependent executable on Linux.
//!
//! A position-independent `critic` carries about 49,000 relative relocations
//! (vtables, panic locations and string tables of wasmtime and cranelift)
//! that the dynamic loader applies on every start, copying some 200 pages on
//! write: 0.8 ms of a `critic check` that takes 8 ms. Without PIE the linker
//! resolves them once. The binary's own image loses address randomization
//! (the stack, heap, shared libraries and wasm memories keep theirs), the
//! same trade Go makes for its binaries by default. Only the binary is
//! affected: the library, tests and guest detectors build as before.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo::rustc-link-arg-bin=critic=-no-pie");
    }
}
