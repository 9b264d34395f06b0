//! `critic eliminate`: a Python function reduced to what its uncovered lines
//! need (covered-code elimination, `critic_sdk::python::eliminate`).

use crate::cli::common::Output;
use crate::evaluate::verdict::escape_terminal;
use anyhow::anyhow;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The largest source file read: a module this size is already unusual,
/// and the stack its syntax tree may need grows with it.
const MAX_SOURCE_BYTES: u64 = 4 << 20;

/// `critic eliminate`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// The Python file.
    file: PathBuf,
    /// The function: `name`, or `Class.method` for a method.
    #[arg(long)]
    function: String,
    /// The function's uncovered lines (line numbers of FILE, as coverage
    /// reports them), comma-separated.
    #[arg(long, value_delimiter = ',', required = true, num_args = 1..)]
    uncovered: Vec<usize>,
    /// `json`: the slice, its line map and counts; `text`: the slice with
    /// the file's line numbers in the margin.
    #[arg(long, value_enum, default_value = "json")]
    output: Output,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let source = read_source(&args.file)?;
    let e = critic_sdk::python::eliminate(&source, &args.function, &args.uncovered)
        .map_err(|e| anyhow::anyhow!("{}: {}", args.file.display(), e))?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.output {
        Output::Json => {
            serde_json::to_writer_pretty(&mut out, &e)?;
            writeln!(out)?;
        }
        Output::Text => {
            for ((_, line), text) in e.line_map.iter().zip(e.slice.lines()) {
                writeln!(out, "{line:>5} | {}", escape_terminal(text, false))?;
            }
            writeln!(
                out,
                "{} of {} statements kept for uncovered lines {}",
                e.slice_statements,
                e.original_statements,
                args.uncovered
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
    }
    out.flush()?;
    Ok(crate::cli::common::EXIT_ACCEPT)
}

/// `path`'s text: a regular file (opening does not wait on a FIFO) of at
/// most [`MAX_SOURCE_BYTES`], in UTF-8.
fn read_source(path: &Path) -> anyhow::Result<String> {
    let bytes = crate::sys::bounded_read::read_regular_file(path, MAX_SOURCE_BYTES)
        .map_err(|e| anyhow!("{}: cannot read the source: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| anyhow!("{}: not UTF-8 text: {e}", path.display()))
}
