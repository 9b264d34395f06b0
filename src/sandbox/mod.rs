//! Confined runs of untrusted code, below the detectors' capabilities:
//! the confinement itself (namespaces, mounts, Landlock, the seccomp filter,
//! memory limits; `confine`), scratch copies of a work tree to run in
//! (`scratch`), and opening paths beneath a root with no link followed
//! (`beneath`). Detectors' `run` capability, skill builds, grading and
//! experiments' agent turns all use it.

pub(crate) mod beneath;
pub mod confine;
pub mod scratch;
