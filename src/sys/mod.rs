//! Operating-system helpers the layers share: private directories, atomic
//! and bounded file writes, tree removal that cannot be led astray, the
//! registry of what an interrupted host undoes, the one work queue, and
//! JSON errors told without quoting their input.

pub mod atomic_file;
pub mod bounded_read;
pub mod interrupt;
pub mod json_error;
pub mod parallel;
pub mod private_dir;
pub mod remove_tree;
