//! The `critic` binary: the command line lives in the library's `cli`
//! module, so that every layer below it stays private to the crate.

fn main() -> std::process::ExitCode {
    pluggable_critic::cli::main()
}
