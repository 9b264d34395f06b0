//! What a confined command gets and is kept from, by name: its limits, its
//! devices and namespaces, its private directories and the places hidden
//! from it.

use std::path::Path;

/// Largest file a confined command may write (`RLIMIT_FSIZE`); scratch
/// copies live on tmpfs, in memory.
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Most processes a confined command's user may have (`RLIMIT_NPROC`, counted
/// in its own user namespace): a fork bomb stops here.
pub const MAX_PROCESSES: u64 = 1024;

/// Devices a confined command may write to.
pub(super) const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The devices a confined command's `/dev` holds (a fresh tmpfs with these
/// bound in, as bubblewrap's `--dev` makes): nothing of the user's
/// terminals, disks or input devices, which a command could read.
pub(super) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The links of a usual `/dev` to the process's own descriptors.
pub(super) const DEVICE_LINKS: &[(&std::ffi::CStr, &std::ffi::CStr)] = &[
    (c"/proc/self/fd", c"/dev/fd"),
    (c"/proc/self/fd/0", c"/dev/stdin"),
    (c"/proc/self/fd/1", c"/dev/stdout"),
    (c"/proc/self/fd/2", c"/dev/stderr"),
];

/// The namespaces every confined command gets.
pub(super) const NAMESPACES: libc::c_int = libc::CLONE_NEWUSER
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWIPC;

/// Where services listen on Unix sockets: under `/run` (the session bus
/// and systemd's user manager in `/run/user/<uid>`, the system bus and
/// manager, container and VM engines, databases), and the X server's. Landlock
/// does not govern connecting to a socket file, and through one of these a
/// run could have a process started outside its confinement, write to a
/// database, or type into the user's terminal. Every directory of `/run`
/// (and of a `/var/run` that is not a link to it) is covered by an empty
/// read-only tmpfs, and every socket there by `/dev/null`, except these
/// entries of `/run`, which hold programs and no service sockets.
pub(super) const RUN_KEPT: &[&str] = &[
    "current-system",
    "booted-system",
    "opengl-driver",
    "opengl-driver-32",
    "wrappers",
    "lock",
];

/// Socket directories outside `/run` and the private directories, hidden
/// the same way.
pub(super) const SOCKET_DIRS: &[&str] = &["/var/snap/lxd/common/lxd"];

/// Directories each command gets empty and its own (a fresh tmpfs each):
/// whatever the host's users keep there (a tmux or `critic serve` socket, an
/// ssh-agent's, a lock, a cache) is out of sight.
pub(super) const PRIVATE_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// How much each private directory holds unless the caller says otherwise
/// (an agent's turn: `agent.limits.tmp`). A tmpfs lives in memory: without
/// a size, each could take half of the host's.
pub const DEFAULT_PRIVATE_DIR_BYTES: u64 = 1 << 30;

/// Whether `path` lies in a directory a confined command gets empty and
/// its own (a program kept there is not there for it).
pub fn in_private_dir(path: &Path) -> bool {
    PRIVATE_DIRS.iter().any(|d| path.starts_with(d))
}

/// Where credentials usually live in a home directory; each that exists is
/// covered (a directory by an empty tmpfs, a file by `/dev/null`) in the
/// user's home and in the one `HOME` names, since a run can read what the
/// user can and what it prints may reach the agent and its model.
pub(super) const SECRET_PLACES: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".kube",
    ".config/gh",
    ".docker",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gcloud",
    ".azure",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".password-store",
    ".local/share/keyrings",
    ".config/hub",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".local/share/fish/fish_history",
    // The coding agents' own sign-ins.
    ".claude/.credentials.json",
    ".claude.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".gemini/google_accounts.json",
    ".config/github-copilot",
    ".copilot/config.json",
    ".cursor/cli-config.json",
    ".openhands/secrets.json",
    // Tokens of other tools that keep them in a file.
    ".cache/huggingface/token",
    ".huggingface/token",
    ".vault-token",
    ".config/rclone",
    ".config/containers/auth.json",
    ".config/op",
    ".terraform.d/credentials.tfrc.json",
    ".pulumi/credentials.json",
    ".boto",
    ".s3cfg",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".gem/credentials",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".condarc",
];

/// The Landlock ABI that governs connecting to pathname Unix sockets
/// (`LANDLOCK_ACCESS_FS_RESOLVE_UNIX`, Linux 7.1). Below it, the sockets a
/// command could reach are hidden by mounts instead (see `hidden::Hidden`).
pub(super) const UNIX_SOCKET_ABI: u32 = 9;
