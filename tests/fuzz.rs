//! Bounded-time fuzzing of everything the host parses from untrusted input:
//! no input may panic it or make it allocate without bound.
//!
//! Targets (one `#[test]` each):
//!
//! * `fuzz_manifest`: [`skill::parse`] on the text, [`skill::load_with_memo`]
//!   on the raw bytes written as `critic.yaml` (twice when it loads, the second
//!   time through the memo that skips the schema), and the [`TestClassifier`]
//!   built from a manifest that loaded;
//! * `fuzz_events_file`: [`events::load`] of one file, with format detection
//!   and with each format forced, then the [`EventFeed`] encodings of the result;
//! * `fuzz_events_dir`: [`events::load`] of a persisted OpenHands `events/`
//!   directory (flat, or inside a conversation directory) of 1 to 4 files;
//! * `fuzz_hook_input`: every agent's hook-input reader and answer on the
//!   bytes an agent would send a stop hook;
//! * `fuzz_patch`: [`diff::parse`], [`diff::sections`], [`diff::apply`] of the
//!   parsed hunks (onto the old text they describe, onto unrelated text, and
//!   back again with [`Hunk::reversed`]), [`diff::unified`], the host's
//!   [`patch::parse_patch`], [`new_file_diff`]'s section splitting, and the
//!   applier grading uses ([`apply::apply`], binary patches included);
//! * `fuzz_eliminate`: covered-code elimination
//!   ([`critic_sdk::python::eliminate`]) of every function of a Python
//!   source, for each statement line alone and all of them at once, lines
//!   outside the function too; every slice must parse;
//! * `fuzz_state`: random `harness.json` and `signal-a.json` bytes in the
//!   layout [`StateStore`] uses, for an arbitrary session id, then
//!   [`StateStore::open`], [`Session::signal_state`], saving, and reopening;
//! * `fuzz_test_log`: grading's readers of a test run's output (model- and
//!   patch-shaped): every log format's parser, pytest's report reader, and
//!   the record made of a run with that output on stdout and stderr;
//! * `fuzz_dataset`: the instances and predictions readers on a file each
//!   (the predictions checked against the instances that were read);
//! * `fuzz_experiment_file`: the experiment file's loader on the text, in a
//!   directory with the files a file names.
//!
//! Each case starts from a seed of `tests/fuzz-corpus/<corpus>/` (every file
//! there is a seed; `fuzz_events_dir` uses the `events` corpus) and applies
//! random byte-level mutations (bit flips, inserted, deleted, repeated and
//! spliced bytes) and structure-aware ones (numbers replaced by `1e20`,
//! `18446744073709551616`, `NaN`, ...; values replaced by tokens of the
//! format; nesting up to 20 000 levels deep; long runs of one byte; invalid
//! UTF-8 and NUL bytes; duplicated and dropped lines), or is random bytes or a
//! random soup of the format's tokens. A case passes when every call returns,
//! `Ok` or `Err`: a panic (caught with `catch_unwind`) fails it, and so does
//! holding more than 64 MiB + 64 bytes per input byte (1 KiB for manifests,
//! whose test patterns compile into regexes) at peak on the fuzzing thread.
//! A failing case is shrunk by proptest, then minimized further by deleting
//! lines and byte ranges while it fails at the same place, and the test
//! panics with the minimal input (panic message and location included),
//! which it also writes under `target/tmp/fuzz-failures/`. Copy it to
//! `tests/fuzz-corpus/<corpus>/crash-<n>`: the `replay_*_corpus` tests run
//! every corpus file as is, so the crash stays a regression test.
//!
//! The calls run on a thread with the 8 MiB stack of a process's main thread,
//! where the `critic` binary parses its inputs, and the allocator refuses
//! what would take that thread past 4 GiB. A stack overflow or a refused
//! allocation aborts a process rather than failing a case, so each target
//! fuzzes in a child process (this binary, running that one test with
//! `CRITIC_FUZZ_CHILD` set), and each replay runs in one too (the
//! `replay_child_process` test, a no-op unless its variables are set); when
//! the child dies, the test fails with the cause and the input being tried
//! (not minimized; it is also in `target/tmp/fuzz-last-input/`).
//!
//! Environment:
//!
//! * `CRITIC_FUZZ_CASES`: cases per target (default 256, so `cargo test`
//!   stays fast; CI raises it);
//! * `CRITIC_FUZZ_SECONDS`: wall-clock budget per target, in seconds
//!   (default 20); a target stops generating cases once it is spent (a
//!   failure found by then is still shrunk);
//! * `CRITIC_FUZZ_SEED` (optional): the RNG seed, a `u64`; each target prints
//!   the seed it used, to replay a run.

use critic_sdk::diff;
use critic_sdk::{Hunk, LineKind, PatchOrigin};
use pluggable_critic::agents::{self, EventsFormat};
use pluggable_critic::detector::feed::EventFeed;
use pluggable_critic::evaluate::state::{Session, StateStore};
use pluggable_critic::skill;
use pluggable_critic::workspace::apply;
use pluggable_critic::workspace::new_file_diff;
use pluggable_critic::workspace::{self, TestClassifier};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::Cell;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Allocation accounting: bytes live on each thread, and their peak.

mod alloc {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// The system allocator, counting what each thread holds, and refusing
    /// (so the process aborts, "memory allocation of N bytes failed") what
    /// would take a thread past its cap: a runaway case must not get the
    /// machine's memory killer to pick a process. Memory freed on another
    /// thread than the one that allocated it only lowers the count.
    pub struct Counting;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
        static CAP: Cell<isize> = const { Cell::new(isize::MAX) };
    }

    /// Whether this thread may take `grow` more bytes.
    fn allowed(grow: isize) -> bool {
        LIVE.try_with(|live| {
            CAP.try_with(|cap| live.get().saturating_add(grow) <= cap.get())
                .unwrap_or(true)
        })
        .unwrap_or(true)
    }

    fn add(delta: isize) {
        let _ = LIVE.try_with(|live| {
            let now = live.get() + delta;
            live.set(now);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
        });
    }

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if !allowed(layout.size() as isize) {
                return std::ptr::null_mut();
            }
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                add(layout.size() as isize);
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            if !allowed(layout.size() as isize) {
                return std::ptr::null_mut();
            }
            let p = unsafe { System.alloc_zeroed(layout) };
            if !p.is_null() {
                add(layout.size() as isize);
            }
            p
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) };
            add(-(layout.size() as isize));
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if !allowed(new_size as isize - layout.size() as isize) {
                return std::ptr::null_mut();
            }
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                add(new_size as isize - layout.size() as isize);
            }
            p
        }
    }

    /// Run `f` with this thread allowed at most `cap` more bytes than it
    /// holds now, returning its result and the most bytes the thread held
    /// during it beyond what it held before.
    pub fn peak_during<T>(cap: usize, f: impl FnOnce() -> T) -> (T, usize) {
        let start = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(start));
        CAP.with(|c| c.set(start.saturating_add(cap as isize)));
        let out = f();
        CAP.with(|c| c.set(isize::MAX));
        let peak = PEAK.with(Cell::get);
        (out, (peak - start).max(0) as usize)
    }
}

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

// ---------------------------------------------------------------------------
// Settings.

fn env_number(name: &str) -> Option<f64> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Some(n),
        _ => panic!("{name}={text:?} is not a non-negative number"),
    }
}

fn cases() -> u32 {
    env_number("CRITIC_FUZZ_CASES").map_or(256, |n| n.min(u32::MAX as f64) as u32)
}

fn budget() -> Duration {
    Duration::from_secs_f64(env_number("CRITIC_FUZZ_SECONDS").unwrap_or(20.0).min(1e6))
}

fn rng_seed() -> u64 {
    match std::env::var("CRITIC_FUZZ_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("CRITIC_FUZZ_SEED={s:?} is not a u64")),
        Err(_) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            now.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32)
        }
    }
}

/// Inputs are cut to this size after mutation.
const MAX_INPUT: usize = 1 << 20;

thread_local! {
    /// Bytes a case may hold per byte of input, beyond the fixed allowance.
    static BYTES_PER_INPUT_BYTE: Cell<usize> = const { Cell::new(64) };
}

/// Set [`BYTES_PER_INPUT_BYTE`] for this thread's cases, from `corpus`: a
/// manifest's `test_patterns` compile into a regex of some 750 bytes per
/// pattern byte (linear, measured up to 256 KiB of `*`), so manifests get
/// 1 KiB per byte; Ruff's parser keeps an error for every invalid token
/// (115 bytes per byte beyond the fixed allowance, measured on 691,578
/// control characters), so Python sources get 256; everything else 64.
fn set_memory_allowance(corpus: &str) {
    let per_byte = match corpus {
        "manifest" => 1024,
        "python" => 256,
        _ => 64,
    };
    BYTES_PER_INPUT_BYTE.with(|b| b.set(per_byte));
}

/// Bytes a case can never hold: the allocation that would pass this is
/// refused, which aborts the process (unlike [`memory_budget`], which fails
/// the case after it returns).
const HARD_CAP: usize = 4 << 30;

/// Peak bytes a case may hold: a fixed allowance (the JSON Schema validator is
/// compiled on first use) plus a multiple of the input.
fn memory_budget(input_bytes: usize) -> usize {
    (64 << 20) + BYTES_PER_INPUT_BYTE.with(Cell::get) * input_bytes
}

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-corpus")
        .join(target)
}

fn scratch_dir(kind: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(kind);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every file of the target's corpus, by name.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let files: Vec<(String, Vec<u8>)> = corpus_paths(target)
        .into_iter()
        .map(|(name, path)| (name, std::fs::read(path).unwrap()))
        .collect();
    assert!(
        !files.is_empty(),
        "{}: no seeds",
        corpus_dir(target).display()
    );
    files
}

// ---------------------------------------------------------------------------
// Inputs: a corpus seed and mutations, random bytes, or a soup of tokens.

/// Numbers that overflow, underflow, or are not numbers at all.
const NUMBERS: &[&[u8]] = &[
    b"1e20",
    b"-1e20",
    b"1e300",
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"5e-324",
    b"1.7976931348623157e308",
    b"18446744073709551616",
    b"18446744073709551615",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"4294967296",
    b"4294967295",
    b"99999999999999999999999",
    b"-1",
    b"-0",
    b"0",
    b"0.0",
    b"-0.5",
    b"NaN",
    b"nan",
    b".nan",
    b".NaN",
    b"inf",
    b"-inf",
    b".inf",
    b"-.inf",
    b"Infinity",
    b"0x7fffffff",
    b"0o777",
    b"1_000",
    b"1e",
    b"--1",
    b"\"1\"",
    b"null",
];

/// Bytes every format should survive.
const COMMON: &[&[u8]] = &[
    b"\0",
    b"\xff",
    b"\xfe\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xef\xbb\xbf",
    b"\xc3\xa9",
    b"\xe2\x80\xa8",
    b"\r\n",
    b"\r",
    b"\n",
    b"\t",
    b"\\",
    b"\"",
    b"'",
    b"\\u0000",
    b"\\ud800",
    b"\\udfff\\ud800",
    b"\\uZZZZ",
    b" ",
    b"",
];

const YAML_TOKENS: &[&[u8]] = &[
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"!!binary ",
    b"!!float ",
    b"!!int ",
    b"!!str ",
    b"!!null ",
    b"!!map ",
    b"!!seq ",
    b"!custom ",
    b"!<tag:yaml.org,2002:str> ",
    b"? ",
    b": ",
    b"- ",
    b"---\n",
    b"...\n",
    b"%YAML 1.2\n",
    b"%TAG ! tag:x,2000:\n",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b"|\n",
    b">-\n",
    b"# comment\n",
    b"~",
    b"true",
    b"no",
    b"timeout: ",
    b"weight: ",
    b"memory_mb: ",
    b"threshold: ",
    b"max_iterations: ",
    b"type: soft\n",
    b"type: hard_gate\n",
    b"detector: /dev/null\n",
    b"detector: .\n",
    b"detector: \"\"\n",
    b"test_patterns: [\"[\", \"{a,{b,c}\", \"**/\\\\\"]\n",
    b"capabilities: [log, log]\n",
    b"limits: {memory_mb: 4096, output_kb: 262144, stdio_kb: 65536}\n",
    b"signals:\n  - {name: x, type: hard_gate, detector: d.wasm, timeout: 1e20}\n",
    b"signals:\n  - {name: y, type: soft, weight: 1e308, detector: d.wasm}\n",
    b"99999999999999999999999s",
    b"1e300m",
    b"0.0000000001ms",
    b"\"\\x00\\N\\_\\L\\P\\U0010FFFF\"",
];

const JSON_TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"{}",
    b"[]",
    b"true",
    b"false",
    b"null",
    b"\"\"",
    b"\"kind\":",
    b"\"history\":",
    b"\"history\":[]",
    b"\"history\":{}",
    b"\"action\":",
    b"\"observation\":",
    b"\"exit_code\":",
    b"\"content\":",
    b"\"content\":[{\"type\":\"text\",\"text\":1}]",
    b"\"tool_call\":{\"arguments\":\"[[[[{\\\"a\\\":1e999}\"}",
    b"\"action\":{\"kind\":\"FinishAction\",\"message\":7}",
    b"\"metadata\":{\"exit_code\":",
    b"\"extras\":{\"metadata\":{\"exit_code\":1e20}}",
    b"\"tool_call_metadata\":{\"function_name\":",
    b"\"cause\":",
    b"\"id\":",
    b"\"llm_message\":",
    b"\"system_prompt\":",
    b"\"ActionEvent\"",
    b"\"ObservationEvent\"",
    b"\"MessageEvent\"",
    b"\"SystemPromptEvent\"",
    b"\"AgentErrorEvent\"",
    b"\"UserRejectObservation\"",
    b"\"FinishAction\"",
    b"\"finish\"",
    b"\"run\"",
    b"\"message\"",
    b"\"error\"",
    b"\"schema_version\":",
    b"\"schema_version\":1",
    b"\"instance\":\"base@ws\"",
    b"\"session\":\"sess\"",
    b"\"state\":",
    b"\"iteration\":",
    b"\"rejections\":",
    b"\"signal\":\"a\"",
];

const DIFF_TOKENS: &[&[u8]] = &[
    b"diff --git a/x b/x\n",
    b"--- a/x\n+++ b/x\n",
    b"--- /dev/null\n+++ b/link\n",
    b"new file mode 120000\n",
    b"old mode 100644\nnew mode 100755\n",
    b"rename from x\nrename to missing\n",
    b"index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n",
    b"GIT binary patch\nliteral 0\nHcmV?d00001\n\n",
    b"GIT binary patch\ndelta 5\nMcmV+{0Mq}t7u6TA\n\n",
    b"\\ No newline at end of file\n",
    b"x\r\n",
    b"diff --git a/a b/b b/a b/b\n",
    b"diff --git \"a/\\303\\251\" \"b/\\303\\251\"\n",
    b"diff --git \"a/\\1a\xc3\xa9\" b/x\n",
    b"diff --git \"a/\\",
    b"diff --git \"\n",
    b"diff --git a/\xc3\xa9 b/\xc3\xa9\n",
    b"@@ -0,0 +1 @@\n",
    b"@@ -1 +1 @@\n",
    b"@@ -1,0 +1,0 @@\n",
    b"@@ -4294967295 +4294967295 @@\n",
    b"@@ -4294967295,1 +4294967295,1 @@\n x\n",
    b"@@ -1,1 +4294967295,2 @@\n-a\n+b\n+c\n",
    b"@@ -4294967295,2 +1,1 @@\n-a\n-b\n+c\n",
    b"@@ -1,4294967295 +1 @@\n",
    b"@@ -4294967296 +1 @@\n",
    b"@@ -1,2 +1,2 @@ section\n",
    b"@@ ",
    b" @@",
    b"@@ -",
    b" +",
    b"\n+",
    b"\n-",
    b"\n ",
    b"\n\n",
    b"\n\\ No newline at end of file\n",
    b"--- /dev/null\n",
    b"+++ /dev/null\n",
    b"--- a/",
    b"+++ b/",
    b"--- \"a/\\",
    b"rename from ",
    b"rename to ",
    b"copy from \"",
    b"copy to ",
    b"new file mode 100644\n",
    b"deleted file mode 100644\n",
    b"Binary files a/x and b/x differ\n",
    b"GIT binary patch\n",
    b"\\0",
    b"\\377",
    b"\\\"",
];

/// Nesting: opener repeated, then the middle, then the closer repeated (or
/// nothing, left open).
const NESTS: &[(&[u8], &[u8], &[u8])] = &[
    (b"[", b"", b"]"),
    (b"{\"a\":", b"1", b"}"),
    (b"[{\"k\":", b"0", b"}]"),
    (b"{a: ", b"1", b"}"),
    (b"- ", b"x", b""),
    (b"? ", b"k", b""),
    (b"&a [", b"", b"]"),
    (b"!t ", b"x", b""),
    (b"\"", b"", b""),
    (b"{", b"", b""),
    (b"@@ -1 +1 @@\n", b"", b""),
    (b"diff --git a/x b/x\n", b"", b""),
];

#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(Index, u8),
    SetByte(Index, u8),
    Insert(Index, Vec<u8>),
    Delete(Index, usize),
    Truncate(Index),
    /// Repeat a slice (of up to 64 bytes) in place.
    Repeat(Index, usize, usize),
    /// Insert up to 4 KiB of another seed.
    Splice(Index, Index, Index, usize),
    Token(Index, Index),
    /// Replace a run of digits with one of [`NUMBERS`].
    Number(Index, Index),
    /// Replace the value after a `:` (up to `,`, `}`, `]` or a line end)
    /// with a token or a number.
    Value(Index, Index),
    Nest(Index, Index, usize, bool),
    Long(Index, u8, usize),
    DupLine(Index, usize),
    DropLine(Index),
}

#[derive(Debug, Clone)]
enum Piece {
    Token(Index),
    Byte(u8),
}

#[derive(Debug, Clone)]
enum Recipe {
    Mutated(Index, Vec<Mutation>),
    Random(Vec<u8>),
    Soup(Vec<Piece>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let index = any::<Index>;
    prop_oneof![
        (index(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit(at, bit)),
        (index(), any::<u8>()).prop_map(|(at, b)| Mutation::SetByte(at, b)),
        (index(), vec(any::<u8>(), 1..16)).prop_map(|(at, b)| Mutation::Insert(at, b)),
        (index(), 1usize..64).prop_map(|(at, n)| Mutation::Delete(at, n)),
        index().prop_map(Mutation::Truncate),
        (index(), 1usize..64, 1usize..2000).prop_map(|(at, n, k)| Mutation::Repeat(at, n, k)),
        (index(), index(), index(), 1usize..4096)
            .prop_map(|(seed, from, at, n)| Mutation::Splice(seed, from, at, n)),
        (index(), index()).prop_map(|(at, t)| Mutation::Token(at, t)),
        (index(), index()).prop_map(|(nth, t)| Mutation::Number(nth, t)),
        (index(), index()).prop_map(|(nth, t)| Mutation::Value(nth, t)),
        (
            index(),
            index(),
            prop_oneof![1usize..64, 64usize..=20_000],
            any::<bool>()
        )
            .prop_map(|(at, kind, depth, closed)| Mutation::Nest(at, kind, depth, closed)),
        (
            index(),
            any::<u8>(),
            prop_oneof![1usize..256, 256usize..200_000]
        )
            .prop_map(|(at, b, n)| Mutation::Long(at, b, n)),
        (index(), 1usize..500).prop_map(|(nth, k)| Mutation::DupLine(nth, k)),
        index().prop_map(Mutation::DropLine),
    ]
}

fn recipe() -> impl Strategy<Value = Recipe> {
    prop_oneof![
        8 => (any::<Index>(), vec(mutation(), 0..8))
            .prop_map(|(seed, m)| Recipe::Mutated(seed, m)),
        1 => vec(any::<u8>(), 0..2048).prop_map(Recipe::Random),
        1 => vec(
            prop_oneof![
                any::<Index>().prop_map(Piece::Token),
                (0x20u8..0x7f).prop_map(Piece::Byte),
                Just(Piece::Byte(b'\n')),
            ],
            0..64,
        )
        .prop_map(Recipe::Soup),
    ]
}

/// What a target mutates with: its seeds and its format's tokens.
struct Material {
    corpus: &'static str,
    seeds: Vec<Vec<u8>>,
    tokens: Vec<&'static [u8]>,
}

impl Material {
    fn new(corpus_name: &'static str, tokens: &[&'static [u8]]) -> Material {
        let mut all = tokens.to_vec();
        all.extend_from_slice(COMMON);
        all.extend_from_slice(NUMBERS);
        Material {
            corpus: corpus_name,
            seeds: corpus(corpus_name)
                .into_iter()
                .map(|(_, bytes)| bytes)
                .collect(),
            tokens: all,
        }
    }

    fn token(&self, t: &Index) -> &'static [u8] {
        self.tokens[t.index(self.tokens.len())]
    }

    fn build(&self, recipe: &Recipe) -> Vec<u8> {
        let mut out = match recipe {
            Recipe::Random(bytes) => bytes.clone(),
            Recipe::Soup(pieces) => {
                let mut out = Vec::new();
                for piece in pieces {
                    match piece {
                        Piece::Token(t) => out.extend_from_slice(self.token(t)),
                        Piece::Byte(b) => out.push(*b),
                    }
                }
                out
            }
            Recipe::Mutated(seed, mutations) => {
                let mut data = seed.get(&self.seeds).clone();
                for m in mutations {
                    self.mutate(&mut data, m);
                    data.truncate(MAX_INPUT);
                }
                data
            }
        };
        out.truncate(MAX_INPUT);
        out
    }

    fn mutate(&self, data: &mut Vec<u8>, m: &Mutation) {
        let pos = |at: &Index, data: &Vec<u8>| at.index(data.len() + 1);
        match m {
            Mutation::FlipBit(at, bit) => {
                if !data.is_empty() {
                    let i = at.index(data.len());
                    data[i] ^= 1 << bit;
                }
            }
            Mutation::SetByte(at, b) => {
                if !data.is_empty() {
                    let i = at.index(data.len());
                    data[i] = *b;
                }
            }
            Mutation::Insert(at, bytes) => {
                let i = pos(at, data);
                data.splice(i..i, bytes.iter().copied());
            }
            Mutation::Delete(at, n) => {
                let i = pos(at, data);
                let end = (i + n).min(data.len());
                data.drain(i..end);
            }
            Mutation::Truncate(at) => {
                let i = pos(at, data);
                data.truncate(i);
            }
            Mutation::Repeat(at, n, times) => {
                let i = pos(at, data);
                let end = (i + n).min(data.len());
                let chunk = data[i..end].to_vec();
                let repeated = chunk.repeat(*times);
                data.splice(end..end, repeated);
            }
            Mutation::Splice(seed, from, at, n) => {
                let other = seed.get(&self.seeds);
                let start = from.index(other.len() + 1);
                let end = (start + n).min(other.len());
                let i = pos(at, data);
                data.splice(i..i, other[start..end].iter().copied());
            }
            Mutation::Token(at, t) => {
                let i = pos(at, data);
                data.splice(i..i, self.token(t).iter().copied());
            }
            Mutation::Number(nth, t) => {
                let runs = digit_runs(data);
                if !runs.is_empty() {
                    let (start, end) = *nth.get(&runs);
                    data.splice(start..end, t.get(NUMBERS).iter().copied());
                }
            }
            Mutation::Value(nth, t) => {
                let colons: Vec<usize> = data
                    .iter()
                    .enumerate()
                    .filter(|(_, &b)| b == b':')
                    .map(|(i, _)| i + 1)
                    .collect();
                if !colons.is_empty() {
                    let start = *nth.get(&colons);
                    let end = data[start..]
                        .iter()
                        .position(|b| matches!(b, b',' | b'}' | b']' | b'\n'))
                        .map_or(data.len(), |p| start + p);
                    let mut value = b" ".to_vec();
                    value.extend_from_slice(self.token(t));
                    data.splice(start..end, value);
                }
            }
            Mutation::Nest(at, kind, depth, closed) => {
                let (open, middle, close) = kind.get(NESTS);
                let mut nest = open.repeat(*depth);
                nest.extend_from_slice(middle);
                if *closed {
                    nest.extend_from_slice(&close.repeat(*depth));
                }
                let i = pos(at, data);
                data.splice(i..i, nest);
            }
            Mutation::Long(at, b, n) => {
                let i = pos(at, data);
                data.splice(i..i, std::iter::repeat_n(*b, *n));
            }
            Mutation::DupLine(nth, times) => {
                let lines = line_spans(data);
                let (start, end) = *nth.get(&lines);
                let line = data[start..end].to_vec();
                let times = (*times).min(MAX_INPUT / line.len().max(1));
                data.splice(end..end, line.repeat(times));
            }
            Mutation::DropLine(nth) => {
                let lines = line_spans(data);
                let (start, end) = *nth.get(&lines);
                data.drain(start..end);
            }
        }
    }
}

/// Spans of maximal runs of ASCII digits.
fn digit_runs(data: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if data[i].is_ascii_digit() {
            let start = i;
            while i < data.len() && (data[i].is_ascii_digit() || data[i] == b'.') {
                i += 1;
            }
            runs.push((start, i));
        } else {
            i += 1;
        }
    }
    runs
}

/// Spans of the lines, each with its `\n`; at least one (maybe empty).
fn line_spans(data: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, &b) in data.iter().enumerate() {
        if b == b'\n' {
            spans.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < data.len() || spans.is_empty() {
        spans.push((start, data.len()));
    }
    spans
}

// ---------------------------------------------------------------------------
// The driver.

thread_local! {
    /// Set while a case runs: its panics are expected and reported with the
    /// input, so the panic hook stays quiet and only records where.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    /// Where a fuzzing thread writes each input before trying it (the path
    /// less its `.<i>` extension).
    static LAST_INPUT: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
}

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                let place = info
                    .location()
                    .map_or_else(|| "an unknown place".to_string(), |l| l.to_string());
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(place));
            } else {
                default(info);
            }
        }));
    });
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".into()
    }
}

/// Why a case failed; `place` tells two failures apart while minimizing.
struct Failure {
    place: String,
    message: String,
}

/// Run one case: `Err` when `check` panicked or held more memory than
/// [`memory_budget`]; `Ok` with its peak otherwise.
fn run_case(check: &dyn Fn(&[Vec<u8>]), inputs: &[Vec<u8>]) -> Result<usize, Failure> {
    let size: usize = inputs.iter().map(Vec::len).sum();
    LAST_INPUT.with(|last| {
        if let Some(base) = &*last.borrow() {
            for (i, input) in inputs.iter().enumerate() {
                let _ = std::fs::write(base.with_extension(i.to_string()), input);
            }
            for i in inputs.len()..8 {
                let _ = std::fs::remove_file(base.with_extension(i.to_string()));
            }
        }
    });
    QUIET.with(|q| q.set(true));
    LAST_PANIC.with(|p| p.borrow_mut().take());
    let (outcome, peak) = alloc::peak_during(HARD_CAP, || {
        catch_unwind(AssertUnwindSafe(|| check(inputs)))
    });
    QUIET.with(|q| q.set(false));
    if let Err(payload) = outcome {
        let place = LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_default();
        return Err(Failure {
            message: format!("panicked at {place}: {}", panic_message(&*payload)),
            place,
        });
    }
    if peak > memory_budget(size) {
        return Err(Failure {
            place: "memory budget".into(),
            message: format!(
                "held {} MiB at peak for {size} bytes of input (budget {} MiB)",
                peak >> 20,
                memory_budget(size) >> 20
            ),
        });
    }
    Ok(peak)
}

/// Shrink `inputs` further by deleting byte ranges (halving their size down
/// to single bytes) while the case still fails at the same place; proptest's
/// shrinking cannot cut into a corpus seed.
fn minimize(
    check: &dyn Fn(&[Vec<u8>]),
    mut inputs: Vec<Vec<u8>>,
    place: &str,
    deadline: Instant,
) -> Vec<Vec<u8>> {
    let still_fails =
        |candidate: &[Vec<u8>]| matches!(run_case(check, candidate), Err(f) if f.place == place);
    for i in 0..inputs.len() {
        // Whole lines first, then ever smaller byte ranges.
        let mut line = 0;
        while Instant::now() < deadline {
            let spans = line_spans(&inputs[i]);
            let Some(&(start, end)) = spans.get(line) else {
                break;
            };
            let mut candidate = inputs.clone();
            candidate[i].drain(start..end);
            if end > start && still_fails(&candidate) {
                inputs = candidate;
            } else {
                line += 1;
            }
        }
        let mut chunk = inputs[i].len().div_ceil(2);
        while chunk > 0 && Instant::now() < deadline {
            let mut start = 0;
            let mut cut = false;
            while start < inputs[i].len() && Instant::now() < deadline {
                let mut candidate = inputs.clone();
                let end = (start + chunk).min(candidate[i].len());
                candidate[i].drain(start..end);
                if still_fails(&candidate) {
                    inputs = candidate;
                    cut = true;
                } else {
                    start += chunk;
                }
            }
            if !cut {
                chunk /= 2;
            }
        }
    }
    inputs
}

/// An input for a failure message: escaped, the middle cut when long.
fn show(bytes: &[u8]) -> String {
    const EDGE: usize = 1500;
    if bytes.len() <= 2 * EDGE {
        return format!("b\"{}\"", bytes.escape_ascii());
    }
    format!(
        "b\"{}\" ...{} bytes... b\"{}\"",
        bytes[..EDGE].escape_ascii(),
        bytes.len() - 2 * EDGE,
        bytes[bytes.len() - EDGE..].escape_ascii()
    )
}

const FUZZ_CHILD: &str = "CRITIC_FUZZ_CHILD";
const REPORT_BEGIN: &str = "----- fuzz report -----";
const REPORT_END: &str = "----- end of fuzz report -----";

/// Fuzz `target` with `check` on inputs built from `arity` recipes, in a
/// child process (this binary, running test `test` alone), so that a stack
/// overflow or a refused allocation, which abort the process, are reported
/// with the input that caused them. Panics with the report of a failure.
fn fuzz<C>(
    test: &str,
    target: &'static str,
    material: Material,
    arity: std::ops::RangeInclusive<usize>,
    check: C,
) where
    C: Fn(&[Vec<u8>]) + Send + 'static,
{
    if std::env::var_os(FUZZ_CHILD).is_none() {
        return fuzz_in_child(test, target, material.corpus);
    }
    install_panic_hook();
    let thread = std::thread::Builder::new()
        .name(format!("fuzz-{target}"))
        .stack_size(8 << 20)
        .spawn(move || run_target(target, &material, arity, &check))
        .unwrap();
    if let Err(report) = thread.join().unwrap() {
        println!("{REPORT_BEGIN}\n{report}\n{REPORT_END}");
        panic!("{report}");
    }
}

/// The parent's side of [`fuzz`].
fn fuzz_in_child(test: &str, target: &str, corpus: &str) {
    let seed = rng_seed();
    let last_input = scratch_dir("fuzz-last-input").join(target);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(FUZZ_CHILD, "1")
        .env("CRITIC_FUZZ_SEED", seed.to_string())
        .env("RUST_BACKTRACE", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = format!("fuzz {target}: ");
    for line in stderr
        .lines()
        .filter(|l| l.starts_with(&summary) && l.contains(" cases in "))
    {
        eprintln!("{line}");
    }
    if out.status.success() {
        return;
    }
    if let Some((_, rest)) = stdout.split_once(REPORT_BEGIN) {
        let report = rest.split(REPORT_END).next().unwrap_or(rest);
        panic!("{}", report.trim());
    }
    use std::os::unix::process::ExitStatusExt;
    let how = match out.status.signal() {
        Some(signal) => format!("was killed by signal {signal}"),
        None => format!("exited with {}", out.status),
    };
    let why: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("overflowed its stack") || l.contains("memory allocation of"))
        .collect();
    let mut report = format!(
        "fuzz {target}: the fuzzing process {how}: {}\n(seed {seed}; replay with \
         CRITIC_FUZZ_SEED={seed})\nthe input it was trying:\n",
        why.join(" | ")
    );
    for i in 0.. {
        let Ok(input) = std::fs::read(last_input.with_extension(i.to_string())) else {
            break;
        };
        let _ = writeln!(
            report,
            "input {i} ({} bytes, in {}):\n{}",
            input.len(),
            last_input.with_extension(i.to_string()).display(),
            show(&input)
        );
    }
    let _ = write!(
        report,
        "copy input 0 to tests/fuzz-corpus/{corpus}/crash-<n> to keep it as a regression test"
    );
    panic!("{report}");
}

fn run_target(
    target: &str,
    material: &Material,
    arity: std::ops::RangeInclusive<usize>,
    check: &dyn Fn(&[Vec<u8>]),
) -> Result<(), String> {
    let seed = rng_seed();
    let budget = budget();
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        // A rejection only ever means the time budget is spent: stop there.
        max_global_rejects: 0,
        max_shrink_time: 60_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    LAST_INPUT.with(|l| *l.borrow_mut() = Some(scratch_dir("fuzz-last-input").join(target)));
    set_memory_allowance(material.corpus);
    let started = Instant::now();
    let failing = Cell::new(false);
    let ran = Cell::new(0u64);
    let slowest = Cell::new(Duration::ZERO);
    let peak_seen = Cell::new(0usize);
    let strategy = vec(recipe(), arity);
    let result = runner.run(&strategy, |recipes| {
        if !failing.get() && started.elapsed() >= budget {
            return Err(TestCaseError::reject("time budget spent"));
        }
        let inputs: Vec<Vec<u8>> = recipes.iter().map(|r| material.build(r)).collect();
        let case_started = Instant::now();
        let outcome = run_case(check, &inputs);
        ran.set(ran.get() + 1);
        slowest.set(slowest.get().max(case_started.elapsed()));
        match outcome {
            Ok(peak) => {
                peak_seen.set(peak_seen.get().max(peak));
                Ok(())
            }
            Err(failure) => {
                failing.set(true);
                Err(TestCaseError::fail(failure.message))
            }
        }
    });
    eprintln!(
        "fuzz {target}: {} cases in {:.1?} (seed {seed}), slowest case {:.1?}, peak {} KiB",
        ran.get(),
        started.elapsed(),
        slowest.get(),
        peak_seen.get() >> 10
    );
    let recipes = match result {
        Ok(()) => return Ok(()),
        Err(TestError::Abort(_)) if started.elapsed() >= budget => return Ok(()),
        Err(TestError::Abort(why)) => return Err(format!("fuzz {target}: aborted: {why}")),
        Err(TestError::Fail(_, recipes)) => recipes,
    };
    let inputs: Vec<Vec<u8>> = recipes.iter().map(|r| material.build(r)).collect();
    let Err(first) = run_case(check, &inputs) else {
        return Err(format!(
            "fuzz {target}: a case failed but passes when run again (seed {seed})"
        ));
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let inputs = minimize(check, inputs, &first.place, deadline);
    let failure = match run_case(check, &inputs) {
        Err(f) => f,
        Ok(_) => first,
    };
    let dir = scratch_dir("fuzz-failures");
    let mut report = format!(
        "fuzz {target}: {}\n(seed {seed}; replay with CRITIC_FUZZ_SEED={seed})\n",
        failure.message
    );
    for (i, input) in inputs.iter().enumerate() {
        let path = dir.join(format!("{target}.{i}"));
        let _ = std::fs::write(&path, input);
        let _ = writeln!(
            report,
            "input {i} ({} bytes, saved to {}):\n{}",
            input.len(),
            path.display(),
            show(input)
        );
    }
    let _ = write!(
        report,
        "copy input 0 to tests/fuzz-corpus/{}/crash-<n> to keep it as a regression test",
        material.corpus
    );
    Err(report)
}

// ---------------------------------------------------------------------------
// Targets.

/// A skill directory with an (empty) file for every detector a seed names.
fn skill_dir(seeds: &[Vec<u8>]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for seed in seeds {
        let text = String::from_utf8_lossy(seed);
        for word in text.split(|c: char| c.is_whitespace() || "\"'{}[],:".contains(c)) {
            if word.ends_with(".wasm") && !word.starts_with('/') && !word.contains("..") {
                let path = dir.path().join(word);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, b"\0asm").unwrap();
            }
        }
    }
    dir
}

fn check_manifest(inputs: &[Vec<u8>], dir: &Path, memo: &Path) {
    let bytes = &inputs[0];
    let path = dir.join(skill::MANIFEST_FILE);
    let _ = skill::parse(&String::from_utf8_lossy(bytes), dir, &path);
    std::fs::write(&path, bytes).unwrap();
    if let Ok(skill) = skill::load_with_memo(dir, Some(memo)) {
        // A second load finds the memo and skips the schema.
        let _ = skill::load_with_memo(dir, Some(memo));
        if let Ok(classifier) = TestClassifier::new(&skill.manifest.test_patterns) {
            for path in [
                "tests/test_a.py",
                "src/a.rs",
                "",
                "a\0b",
                "\u{e9}/x.spec.js",
            ] {
                let _ = classifier.is_test(path);
            }
        }
    }
}

#[test]
fn fuzz_manifest() {
    let material = Material::new("manifest", YAML_TOKENS);
    let dir = skill_dir(&material.seeds);
    let memo = tempfile::tempdir().unwrap();
    fuzz(
        "fuzz_manifest",
        "manifest",
        material,
        1..=1,
        move |inputs| check_manifest(inputs, dir.path(), memo.path()),
    );
}

fn use_events(events: Vec<critic_sdk::Event>) {
    let _ = serde_json::to_string(&events).unwrap();
    let feed = EventFeed::new(events.into());
    let _ = feed.lean_json();
    let _ = feed.lean_range(1, 3);
    let _ = feed.lean_range(usize::MAX, 0);
    let _ = feed.raw(0);
    let _ = feed.raw(feed.len().saturating_sub(1));
}

fn load_every_way(path: &Path) {
    let forced = agents::FORMATS
        .iter()
        .map(|f| Some(f.name.parse::<EventsFormat>().unwrap()));
    for format in std::iter::once(None).chain(forced) {
        if let Ok(events) = agents::load(path, format) {
            use_events(events);
        }
    }
}

fn check_events_file(inputs: &[Vec<u8>], dir: &Path) {
    let path = dir.join("events.jsonl");
    std::fs::write(&path, &inputs[0]).unwrap();
    load_every_way(&path);
}

#[test]
fn fuzz_events_file() {
    let material = Material::new("events", JSON_TOKENS);
    let dir = tempfile::tempdir().unwrap();
    fuzz(
        "fuzz_events_file",
        "events",
        material,
        1..=1,
        move |inputs| check_events_file(inputs, dir.path()),
    );
}

/// Each agent's reading of a hook input and its answers.
fn check_hook_input(inputs: &[Vec<u8>]) {
    use pluggable_critic::agents::hook::Answer;
    use pluggable_critic::agents::HOOKS;
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&inputs[0]) else {
        return;
    };
    let text = String::from_utf8_lossy(&inputs[0]).into_owned();
    for protocol in HOOKS {
        let input = (protocol.read_input)(&value);
        if let (Some(locate), Some(dir)) = (protocol.locate_events, &input.workspace) {
            let _ = locate(&input, dir);
        }
        for answer in [
            Answer::Stop { notice: None },
            Answer::Stop {
                notice: Some(text.clone()),
            },
            Answer::Continue {
                followup: text.clone(),
            },
        ] {
            let reply = (protocol.reply)(&answer);
            assert_ne!(reply.exit_code, 2, "{}: exit 2 means block", protocol.agent);
        }
    }
}

#[test]
fn fuzz_hook_input() {
    let material = Material::new("hook-input", JSON_TOKENS);
    fuzz(
        "fuzz_hook_input",
        "hook-input",
        material,
        1..=1,
        check_hook_input,
    );
}

/// A conversation directory holding `events/` (even file counts) or a bare
/// events directory (odd counts), one event file per input.
fn check_events_dir(inputs: &[Vec<u8>], root: &Path) {
    let conversation = root.join("conversation");
    let _ = std::fs::remove_dir_all(&conversation);
    let events_dir = if inputs.len().is_multiple_of(2) {
        conversation.join("events")
    } else {
        conversation.clone()
    };
    std::fs::create_dir_all(&events_dir).unwrap();
    for (i, input) in inputs.iter().enumerate() {
        let name = format!("event-{i:05}-0000-{}.json", inputs.len());
        std::fs::write(events_dir.join(name), input).unwrap();
    }
    load_every_way(&conversation);
}

#[test]
fn fuzz_events_dir() {
    let material = Material::new("events", JSON_TOKENS);
    let dir = tempfile::tempdir().unwrap();
    fuzz(
        "fuzz_events_dir",
        "events-dir",
        material,
        1..=4,
        move |inputs| check_events_dir(inputs, dir.path()),
    );
}

/// The old text a file's hunks describe (lines they do not show are filled
/// in), or `None` when the hunks overlap or start implausibly far down.
fn old_text(hunks: &[Hunk]) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    for hunk in hunks {
        let start = if hunk.old_lines == 0 {
            hunk.old_start as usize
        } else {
            (hunk.old_start as usize).saturating_sub(1)
        };
        if start < lines.len() || start > 100_000 {
            return None;
        }
        while lines.len() < start {
            lines.push(format!("filler {}", lines.len()));
        }
        for line in &hunk.lines {
            if line.kind != LineKind::Added {
                lines.push(line.text.clone());
            }
        }
    }
    lines.push("tail".into());
    Some(lines.join("\n") + "\n")
}

fn check_patch(inputs: &[Vec<u8>], classifier: &TestClassifier) {
    let raw = String::from_utf8_lossy(&inputs[0]).into_owned();
    let unrelated = String::from_utf8_lossy(inputs.get(1).map_or(&[][..], Vec::as_slice));
    let _ = diff::sections(&raw);
    for section in new_file_diff::split_sections(&raw) {
        let _ = new_file_diff::section_path(section);
    }
    if let Ok(files) = diff::parse(&raw) {
        for (i, file) in files.iter().enumerate() {
            // Splitting the unrelated text costs as much as it is long: only
            // the first files are tried on it.
            if i < 4 {
                let _ = diff::apply(&unrelated, &file.hunks);
            }
            let Some(old) = old_text(&file.hunks) else {
                continue;
            };
            if let Ok(new) = diff::apply(&old, &file.hunks) {
                let reversed: Vec<Hunk> = file.hunks.iter().map(Hunk::reversed).collect();
                let _ = diff::apply(&new, &reversed);
                let _ = diff::unified(&file.path, &old, &new);
            }
        }
    }
    // The applier grading uses, as `git apply` applies: onto a tree where
    // every path holds the unrelated text (a link for paths named `*link*`).
    let mut base = |path: &str| -> Result<Option<apply::Entry>, String> {
        Ok((!path.contains("missing")).then(|| apply::Entry {
            bytes: unrelated.as_bytes().to_vec(),
            mode: if path.contains("link") {
                apply::Mode::Symlink
            } else {
                apply::Mode::File
            },
        }))
    };
    let _ = apply::apply(&raw, &mut base);
    let _ = workspace::parse_patch(raw, "base", PatchOrigin::File, "fuzz.patch", classifier);
}

fn default_classifier() -> TestClassifier {
    let patterns: Vec<String> = skill::DEFAULT_TEST_PATTERNS
        .iter()
        .map(|s| s.to_string())
        .collect();
    TestClassifier::new(&patterns).unwrap()
}

#[test]
fn fuzz_patch() {
    let material = Material::new("patch", DIFF_TOKENS);
    let classifier = default_classifier();
    fuzz("fuzz_patch", "patch", material, 2..=2, move |inputs| {
        check_patch(inputs, &classifier)
    });
}

const PYTHON_TOKENS: &[&[u8]] = &[
    b"def f(x):\n",
    b"class C:\n",
    b"    @d\n",
    b"    if x:\n",
    b"    elif y:\n",
    b"    else:\n",
    b"        return 1\n",
    b"        raise E\n",
    b"        pass\n",
    b"    for i in x:\n",
    b"        break\n",
    b"        continue\n",
    b"    while x:\n",
    b"    try:\n",
    b"    except E as e:\n",
    b"    except* E:\n",
    b"    finally:\n",
    b"    with a as b:\n",
    b"    match x:\n",
    b"        case [a, *b] if c:\n",
    b"\"\"\"doc\"\"\"\n",
    b"'''\nstring\n'''",
    b"; ",
    b": ",
    b"lambda: 0",
    b"(\n",
    b")\n",
    b"\\\n",
    b"\t",
];

/// Every function of input 0 (as Python source), reduced for each of its
/// statement lines alone, for all of them, and for lines outside it: every
/// call returns, and every slice parses.
fn check_eliminate(inputs: &[Vec<u8>]) {
    use critic_sdk::python::{eliminate, syntax_error, EliminateError};
    let Ok(source) = std::str::from_utf8(&inputs[0]) else {
        return;
    };
    let names = match eliminate(source, "\u{0}", &[]) {
        Err(EliminateError::NotFound { available, .. }) => available,
        _ => return,
    };
    for name in names.iter().take(8) {
        let Ok(whole) = eliminate(source, name, &[]) else {
            continue;
        };
        let mut sets: Vec<Vec<usize>> = whole.kept.iter().take(24).map(|&l| vec![l]).collect();
        sets.push(whole.kept.clone());
        sets.push(vec![0, usize::MAX]);
        for lines in sets {
            if let Ok(e) = eliminate(source, name, &lines) {
                if let Some(error) = syntax_error(&e.slice) {
                    panic!(
                        "the slice of {name} for {lines:?} does not parse ({error}):\n{}",
                        e.slice
                    );
                }
            }
        }
    }
}

#[test]
fn fuzz_eliminate() {
    let material = Material::new("python", PYTHON_TOKENS);
    fuzz("fuzz_eliminate", "python", material, 1..=1, check_eliminate);
}

const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// `harness.json` = input 0 and `signal-a.json` = input 1 in the session
/// directory of skill `sk` and session id input 2 (or `sess`, the seeds'
/// session, when there is none), then open, read, save and reopen.
fn check_state(inputs: &[Vec<u8>], root: &Path) {
    let _ = std::fs::remove_dir_all(root);
    let store = StateStore::new(root).without_fsync();
    let session_id = match inputs.get(2) {
        Some(id) => String::from_utf8_lossy(id).into_owned(),
        None => "sess".to_string(),
    };
    let dir = store.session_dir("sk", &session_id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("harness.json"), &inputs[0]).unwrap();
    std::fs::write(dir.join("signal-a.json"), &inputs[1]).unwrap();
    let read = |session: &mut Session| {
        let state = session.signal_state("a");
        let _ = session.signal_state("b");
        state
    };
    let Ok(mut session) = store.open("sk", &session_id, "base@ws", LOCK_TIMEOUT) else {
        return;
    };
    let Ok(state) = read(&mut session) else {
        return;
    };
    session.harness.iteration = session.harness.iteration.saturating_add(1);
    let _ = session.save_signal("a", state);
    let _ = session.save_harness();
    drop(session);
    if let Ok(mut session) = store.open("sk", &session_id, "base@ws", LOCK_TIMEOUT) {
        let _ = read(&mut session);
    }
}

#[test]
fn fuzz_state() {
    let mut material = Material::new("state", JSON_TOKENS);
    // Session ids: the seeds' own, and ones that need cleaning.
    let ids: [&[u8]; 6] = [
        b"sess",
        b"",
        b"..",
        b"a/b\\c",
        b"\xc3\xa9\0\n",
        &[b'x'; 300],
    ];
    material.seeds.extend(ids.iter().map(|id| id.to_vec()));
    let root = tempfile::tempdir().unwrap();
    fuzz("fuzz_state", "state", material, 2..=3, move |inputs| {
        check_state(inputs, &root.path().join("state"))
    });
}

/// Grading's readers of one test run's output.
fn check_test_log(inputs: &[Vec<u8>]) {
    use pluggable_critic::grading::log_parsers::LogFormat;
    use pluggable_critic::grading::pytest_report;
    use pluggable_critic::grading::record::RunRecord;
    let text = String::from_utf8_lossy(&inputs[0]).into_owned();
    let _ = pytest_report::read(&text);
    for name in LogFormat::names() {
        let format = LogFormat::of_name(name).expect("a name it gave");
        let _ = format.parse(&text);
        for exit_code in [Some(0), Some(1), None] {
            let run = critic_sdk::RunResult {
                exit_code,
                stdout: text.clone(),
                stderr: text.clone(),
                ..Default::default()
            };
            let _ = RunRecord::of(&run, format);
        }
    }
}

#[test]
fn fuzz_test_log() {
    let material = Material::new("test-log", JSON_TOKENS);
    fuzz("fuzz_test_log", "test-log", material, 1..=1, check_test_log);
}

/// The instances file, then the predictions file checked against it.
fn check_dataset(inputs: &[Vec<u8>], dir: &Path) {
    use pluggable_critic::grading::dataset::{read_instances, read_predictions};
    let instances = dir.join("instances.jsonl");
    let predictions = dir.join("predictions.jsonl");
    std::fs::write(&instances, &inputs[0]).unwrap();
    std::fs::write(&predictions, inputs.get(1).unwrap_or(&inputs[0])).unwrap();
    let read = read_instances(&instances).unwrap_or_default();
    let _ = read_predictions(&predictions, &read);
}

#[test]
fn fuzz_dataset() {
    let material = Material::new("dataset", JSON_TOKENS);
    let dir = tempfile::tempdir().unwrap();
    fuzz("fuzz_dataset", "dataset", material, 1..=2, move |inputs| {
        check_dataset(inputs, dir.path())
    });
}

/// A directory with what the experiment seed names: an instances file, a
/// repos directory, a skill.
fn experiment_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("repos")).unwrap();
    std::fs::write(dir.path().join("instances.jsonl"), "").unwrap();
    std::fs::create_dir_all(dir.path().join("skills")).unwrap();
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/fix-only"),
        dir.path().join("skills/fix-only"),
    )
    .unwrap();
    dir
}

fn check_experiment_file(inputs: &[Vec<u8>], dir: &Path) {
    let file = dir.join("exp.yaml");
    std::fs::write(&file, &inputs[0]).unwrap();
    let _ = pluggable_critic::experiment::file::load(&file);
}

#[test]
fn fuzz_experiment_file() {
    let material = Material::new("experiment", YAML_TOKENS);
    let dir = experiment_dir();
    fuzz(
        "fuzz_experiment_file",
        "experiment",
        material,
        1..=1,
        move |inputs| check_experiment_file(inputs, dir.path()),
    );
}

// ---------------------------------------------------------------------------
// Replays: every corpus file, unmutated (`crash-*` files included, so a fixed
// crash stays fixed). Each runs in a child process (this test binary, running
// `replay_child_process`), so that a stack overflow or a refused allocation,
// which abort a process, fail that one file instead of the whole binary.

const REPLAY_KIND: &str = "CRITIC_FUZZ_REPLAY_KIND";
const REPLAY_FILES: &str = "CRITIC_FUZZ_REPLAY_FILES";
const REPLAY_FAILED: &str = "replay failed: ";

/// A target's check of its inputs.
type Check = dyn Fn(&[Vec<u8>]) + Sync;

/// The check of a replay kind, with what it needs on disk.
fn replay_check(kind: &str) -> Box<Check> {
    let scratch = tempfile::tempdir().unwrap();
    match kind {
        "manifest" => {
            let seeds: Vec<Vec<u8>> = corpus("manifest").into_iter().map(|(_, b)| b).collect();
            let dir = skill_dir(&seeds);
            Box::new(move |inputs| check_manifest(inputs, dir.path(), scratch.path()))
        }
        "events" => Box::new(move |inputs| check_events_file(inputs, scratch.path())),
        "events-dir" => Box::new(move |inputs| check_events_dir(inputs, scratch.path())),
        "hook-input" => Box::new(check_hook_input),
        "python" => Box::new(check_eliminate),
        "patch" => {
            let classifier = default_classifier();
            Box::new(move |inputs| check_patch(inputs, &classifier))
        }
        "state" => Box::new(move |inputs| check_state(inputs, &scratch.path().join("state"))),
        "test-log" => Box::new(check_test_log),
        "dataset" => Box::new(move |inputs| check_dataset(inputs, scratch.path())),
        "experiment" => {
            let dir = experiment_dir();
            Box::new(move |inputs| check_experiment_file(inputs, dir.path()))
        }
        other => panic!("no replay kind {other:?}"),
    }
}

/// Not a test of its own: the child process of a replay, when
/// [`REPLAY_KIND`] and [`REPLAY_FILES`] are set (and a no-op otherwise).
#[test]
fn replay_child_process() {
    let (Ok(kind), Ok(files)) = (std::env::var(REPLAY_KIND), std::env::var(REPLAY_FILES)) else {
        return;
    };
    install_panic_hook();
    let check = replay_check(&kind);
    let inputs: Vec<Vec<u8>> = files.lines().map(|f| std::fs::read(f).unwrap()).collect();
    let outcome = std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn_scoped(s, || {
                let corpus = if kind == "manifest" { "manifest" } else { "" };
                set_memory_allowance(corpus);
                LAST_INPUT.with(|l| {
                    *l.borrow_mut() = Some(scratch_dir("fuzz-last-input").join("replay"))
                });
                run_case(&*check, &inputs)
            })
            .unwrap()
            .join()
            .unwrap()
    });
    if let Err(failure) = outcome {
        println!("{REPLAY_FAILED}{}", failure.message.replace('\n', " "));
        panic!("{}", failure.message);
    }
}

/// Replays of one kind; their failures are reported together when dropped.
struct Replays {
    kind: &'static str,
    failures: Vec<String>,
}

impl Replays {
    fn new(kind: &'static str) -> Replays {
        Replays {
            kind,
            failures: Vec::new(),
        }
    }

    /// Check `files` (input 0, 1, ...) in a child process, noting a failure
    /// under `what`.
    fn run(&mut self, what: &str, files: &[&Path]) {
        let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "replay_child_process",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(REPLAY_KIND, self.kind)
            .env(REPLAY_FILES, files.join("\n"))
            .env("RUST_BACKTRACE", "0")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        if out.status.success() {
            return;
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let marked = stdout
            .lines()
            .find_map(|l| l.split_once(REPLAY_FAILED).map(|(_, reason)| reason));
        let reason = match marked {
            Some(reason) => reason.to_string(),
            None => {
                use std::os::unix::process::ExitStatusExt;
                let how = match out.status.signal() {
                    Some(signal) => format!("was killed by signal {signal}"),
                    None => format!("exited with {}", out.status),
                };
                let why: Vec<&str> = stderr
                    .lines()
                    .filter(|l| {
                        l.contains("overflowed its stack") || l.contains("memory allocation of")
                    })
                    .collect();
                format!("the replay process {how}: {}", why.join(" | "))
            }
        };
        self.failures.push(format!("{what}: {reason}"));
    }
}

impl Drop for Replays {
    fn drop(&mut self) {
        if !self.failures.is_empty() && !std::thread::panicking() {
            panic!(
                "{} {} corpus replays failed:\n{}",
                self.failures.len(),
                self.kind,
                self.failures.join("\n")
            );
        }
    }
}

fn corpus_paths(corpus: &str) -> Vec<(String, PathBuf)> {
    let dir = corpus_dir(corpus);
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                path,
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn replay_manifest_corpus() {
    let mut replays = Replays::new("manifest");
    for (name, path) in corpus_paths("manifest") {
        replays.run(&format!("manifest/{name}"), &[&path]);
    }
}

#[test]
fn replay_events_corpus() {
    let files = corpus_paths("events");
    let mut replays = Replays::new("events");
    for (name, path) in &files {
        replays.run(&format!("events/{name}"), &[path]);
    }
    let mut replays = Replays::new("events-dir");
    for (name, path) in &files {
        replays.run(&format!("events/{name} in an events directory"), &[path]);
    }
    let all: Vec<&Path> = files.iter().map(|(_, p)| p.as_path()).collect();
    replays.run("events/* in one events directory", &all);
}

#[test]
fn replay_hook_input_corpus() {
    let mut replays = Replays::new("hook-input");
    for (name, path) in corpus_paths("hook-input") {
        replays.run(&format!("hook-input/{name}"), &[&path]);
    }
}

#[test]
fn replay_python_corpus() {
    let mut replays = Replays::new("python");
    for (name, path) in corpus_paths("python") {
        replays.run(&format!("python/{name}"), &[&path]);
    }
}

#[test]
fn replay_patch_corpus() {
    let mut replays = Replays::new("patch");
    for (name, path) in corpus_paths("patch") {
        // The patch also serves as the unrelated text its hunks are tried on.
        replays.run(&format!("patch/{name}"), &[&path, &path]);
    }
}

#[test]
fn replay_state_corpus() {
    let files = corpus_paths("state");
    let mut replays = Replays::new("state");
    for (h, harness) in &files {
        for (s, signal) in &files {
            replays.run(
                &format!("state/{h} as harness.json, state/{s} as signal-a.json"),
                &[harness, signal],
            );
        }
    }
}

#[test]
fn replay_grading_corpora() {
    for kind in ["test-log", "dataset", "experiment"] {
        let mut replays = Replays::new(kind);
        for (name, path) in corpus_paths(kind) {
            replays.run(&format!("{kind}/{name}"), &[&path]);
        }
    }
}
