//! Operating-system helpers the layers share: private directories, atomic
//! and bounded file writes, tree removal that cannot be led astray, the
//! registry of what an interrupted host undoes, the one work queue, JSON
//! errors told without quoting their input, who is at the other end of
//! a local connection, paths with their links resolved, helper programs
//! run to a time limit, connections forwarded to a fixed endpoint, and the
//! one HTTP client the host calls out with.

pub mod atomic_file;
pub mod bounded_read;
pub mod forward;
pub mod http_client;
pub mod interrupt;
pub mod json_error;
pub mod output_within;
pub mod parallel;
pub mod path_name;
pub mod peer;
pub mod private_dir;
pub mod real_path;
pub mod remove_tree;
pub mod terminal_text;
