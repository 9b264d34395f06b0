//! An events file split into JSON records: JSONL read line by line, so a
//! large transcript is never held whole, or one JSON document (an array of
//! events, or one object).
//!
//! A record knows its place in the file. Read for a check, a file's events
//! keep only that place ([`RawSpan`]) instead of their original JSON, and
//! the host reads it back from the open file when a detector asks
//! (`event-raw`): a 100 MB transcript's events then take the memory of what
//! was extracted from them, about a tenth of the file, and the events of
//! one record share its place. Such a line is parsed once, by its reader
//! ([`Record::parse`]), and the records of a stream convert on every core
//! ([`convert_each`]).

use super::events_error::{EventsError, MAX_EVENTS, MAX_EVENTS_FILE_BYTES};
use super::record_to_events::Origin;
use crate::sys::json_error::describe;
use critic_sdk::{Event, EventKind, RawSpan};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One JSON record of a stream: its 1-based source line (0 inside a
/// document) and its JSON. Each reader parses the fields it needs, once
/// ([`Record::parse`], or [`parsed`] for a whole stream).
pub(crate) struct Record {
    pub(super) line: usize,
    json: Json,
}

/// A record's JSON.
enum Json {
    /// Checked JSON held in memory; the events made from it keep a copy.
    Inline(Box<RawValue>),
    /// The text of a line of a file read for a check, not yet checked (its
    /// reader's parse does that); events keep only its place.
    Line(Box<str>, RawSpan),
}

impl Record {
    /// A record of a document held in memory.
    pub(super) fn inline(line: usize, raw: Box<RawValue>) -> Record {
        Record {
            line,
            json: Json::Inline(raw),
        }
    }

    /// The record's JSON text (a line of a file may not be JSON: see
    /// [`Record::parse`]).
    pub(crate) fn json(&self) -> &str {
        match &self.json {
            Json::Inline(raw) => raw.get(),
            Json::Line(text, _) => text,
        }
    }

    /// A `T` parsed from the record: `Ok(Err(_))` when its JSON holds
    /// something else, an error of the stream (at the record's line) when
    /// it is not JSON at all.
    pub(crate) fn parse<T: DeserializeOwned>(
        &self,
        path: &Path,
    ) -> Result<Result<T, serde_json::Error>, EventsError> {
        match serde_json::from_str(self.json()) {
            Err(e) if e.is_syntax() || e.is_eof() => Err(malformed(path, self.line, &e)),
            parsed => Ok(parsed),
        }
    }

    /// The record's JSON as a value of its own.
    pub(crate) fn into_raw(self, path: &Path) -> Result<Box<RawValue>, EventsError> {
        let line = self.line;
        match self.json {
            Json::Inline(raw) => Ok(raw),
            Json::Line(text, _) => {
                RawValue::from_string(text.into()).map_err(|e| malformed(path, line, &e))
            }
        }
    }

    /// [`EventsError::Unexpected`] for `e`, an error of this record's JSON
    /// as the format's `T` ([`Record::parse`]): `what` the format needs.
    pub(crate) fn unexpected(&self, path: &Path, what: &str, e: &serde_json::Error) -> EventsError {
        let (line, column) = self.place_of(e);
        EventsError::Unexpected {
            path: path.to_path_buf(),
            line,
            column,
            what: what.to_string(),
            message: describe(e),
        }
    }

    /// The line and column in the file of `e`, an error in this record's
    /// JSON.
    pub(crate) fn place_of(&self, e: &serde_json::Error) -> (usize, usize) {
        place(self.line, e)
    }

    /// The record's JSON for an event: a copy, or only its place.
    fn raw_and_span(&self) -> (Option<Box<RawValue>>, Option<RawSpan>) {
        match &self.json {
            Json::Inline(raw) => (Some(raw.clone()), None),
            Json::Line(_, span) => (None, Some(*span)),
        }
    }

    /// A blank event of `kind` at `index` carrying this record's JSON, or
    /// only its place in the file.
    pub(crate) fn event(&self, index: usize, kind: EventKind) -> Event {
        let (raw, raw_span) = self.raw_and_span();
        Event {
            raw,
            raw_span,
            ..Event::new(index, kind)
        }
    }

    /// What the events of this record share, for readers that make several.
    pub(crate) fn origin(&self, class: String, timestamp: Option<String>) -> Origin {
        let (raw, span) = self.raw_and_span();
        Origin {
            raw,
            span,
            class,
            timestamp,
        }
    }
}

/// The line and column in the file of `e`, an error in the JSON of a
/// record that starts line `line` (0: an item of a JSON document, whose
/// place is not kept; the column is then the record's own).
fn place(line: usize, e: &serde_json::Error) -> (usize, usize) {
    match line {
        0 => (0, e.column()),
        line => (line + e.line().saturating_sub(1), e.column()),
    }
}

/// [`EventsError::Malformed`] for `e`, an error in the JSON of a record
/// that starts line `line` of `path`.
pub(super) fn malformed(path: &Path, line: usize, e: &serde_json::Error) -> EventsError {
    let (line, column) = place(line, e);
    EventsError::Malformed {
        path: path.to_path_buf(),
        line,
        column,
        message: describe(e),
    }
}

/// Each record of `records` with a `T` parsed from it (as
/// [`Record::parse`]), parsed in parallel (see [`convert_each`]).
pub(crate) fn parsed<'a, T>(
    path: &'a Path,
    records: Records<'a>,
) -> impl Iterator<Item = Result<(Record, Result<T, serde_json::Error>), EventsError>> + 'a
where
    T: DeserializeOwned + Send + 'a,
{
    convert_each(records, move |record| {
        let parsed = record.parse(path)?;
        Ok((record, parsed))
    })
}

/// `convert` applied to each record of `records`, results in order, a
/// chunk of records at a time on every core: for readers whose records
/// convert independently of each other, which is most of the work of
/// reading a large transcript. The first error ends the stream.
pub(crate) fn convert_each<'a, U, F>(
    mut records: Records<'a>,
    convert: F,
) -> impl Iterator<Item = Result<U, EventsError>> + 'a
where
    U: Send + 'a,
    F: Fn(Record) -> Result<U, EventsError> + Sync + 'a,
{
    const CHUNK: usize = 4096;
    let mut ready = Vec::new().into_iter();
    std::iter::from_fn(move || loop {
        if let Some(next) = ready.next() {
            return Some(next);
        }
        let mut chunk = Vec::with_capacity(CHUNK);
        for record in records.by_ref() {
            let failed = record.is_err();
            chunk.push(record);
            if failed || chunk.len() == CHUNK {
                break;
            }
        }
        if chunk.is_empty() {
            return None;
        }
        ready = parallel_map(chunk, |_, record| convert(record?)).into_iter();
    })
}

/// A stream's records, in order, read as they are asked for.
pub(crate) type Records<'a> = Box<dyn Iterator<Item = Result<Record, EventsError>> + 'a>;

/// The records of `text` held in memory: one array, one object, or JSONL.
pub(super) fn from_text(path: &Path, text: &str) -> Result<Vec<Record>, EventsError> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(EventsError::Empty(path.to_path_buf()));
    }
    let offset_line = text[..text.len() - trimmed.len()].matches('\n').count();
    // `base`: the lines before the text parsed.
    let malformed = |e: serde_json::Error, base: usize| malformed(path, base + 1, &e);
    if trimmed.starts_with('[') {
        let CappedItems(items) =
            serde_json::from_str(trimmed).map_err(|e| malformed(e, offset_line))?;
        if items.len() > MAX_EVENTS {
            return Err(super::events_error::too_many(
                path,
                offset_line + 1,
                "records",
            ));
        }
        return Ok(items
            .into_iter()
            .map(|raw| Record::inline(0, raw))
            .collect());
    }
    // A single pretty-printed object (e.g. one V0 record) or JSONL.
    if let Ok(raw) = serde_json::from_str::<Box<RawValue>>(trimmed) {
        return Ok(vec![Record::inline(offset_line + 1, raw)]);
    }
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .take(MAX_EVENTS + 1)
        .collect();
    if let Some(&(i, _)) = lines.get(MAX_EVENTS) {
        return Err(super::events_error::too_many(path, i + 1, "records"));
    }
    parallel_map(lines, |_, (i, line)| {
        let raw: Box<RawValue> = serde_json::from_str(line).map_err(|e| malformed(e, i))?;
        Ok(Record::inline(i + 1, raw))
    })
    .into_iter()
    .collect()
}

/// A JSON array's items, at most one past [`MAX_EVENTS`] of them (the
/// rest are only checked): an array of millions of `{}` must not be held
/// to be counted.
struct CappedItems(Vec<Box<RawValue>>);

impl<'de> serde::Deserialize<'de> for CappedItems {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Items;
        impl<'de> serde::de::Visitor<'de> for Items {
            type Value = CappedItems;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of events")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<CappedItems, A::Error> {
                let mut items = Vec::new();
                while items.len() <= MAX_EVENTS {
                    match seq.next_element()? {
                        Some(item) => items.push(item),
                        None => return Ok(CappedItems(items)),
                    }
                }
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(CappedItems(items))
            }
        }
        d.deserialize_seq(Items)
    }
}

/// The records of the events file `path`, and the file itself when its
/// records carry their places (`spans_from`: a JSONL file of at least that
/// many bytes). The file must be a regular file (not a FIFO or a device,
/// which would block or never end) of at most [`MAX_EVENTS_FILE_BYTES`],
/// whatever its size claims while it is read.
pub(super) fn from_file(
    path: &Path,
    spans_from: Option<u64>,
) -> Result<(Records<'static>, Option<Arc<File>>), EventsError> {
    let io = |source| EventsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (file, len) = open_regular(path).map_err(io)?;
    let file = Arc::new(file);
    let mut reader = BufReader::with_capacity(1 << 20, ReadAt::new(file.clone()));
    if reader.fill_buf().map_err(io)?.starts_with(&ZSTD_MAGIC) {
        // The file may grow while it is read: its compressed bytes are
        // bounded too, or a stream of empty frames would never end.
        let bytes =
            decompress(reader.take(MAX_EVENTS_FILE_BYTES), MAX_EVENTS_FILE_BYTES).map_err(io)?;
        let text = String::from_utf8(bytes).map_err(|e| io(not_utf8(e)))?;
        return Ok((Box::new(from_text(path, &text)?.into_iter().map(Ok)), None));
    }
    // What opens the file tells a document from JSONL.
    let mut leading = Vec::new();
    let first_byte = loop {
        let buf = reader.fill_buf().map_err(io)?;
        let Some(&b) = buf.first() else {
            return Err(EventsError::Empty(path.to_path_buf()));
        };
        if !b.is_ascii_whitespace() {
            break b;
        }
        leading.push(b);
        reader.consume(1);
    };
    let whole =
        |reader: BufReader<ReadAt>, head: Vec<u8>| -> Result<Records<'static>, EventsError> {
            let mut bytes = head;
            reader
                .take(MAX_EVENTS_FILE_BYTES.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(io)?;
            if bytes.len() as u64 > MAX_EVENTS_FILE_BYTES {
                return Err(io(too_big()));
            }
            let text = String::from_utf8(bytes).map_err(|e| io(not_utf8(e)))?;
            Ok(Box::new(from_text(path, &text)?.into_iter().map(Ok)))
        };
    if first_byte == b'[' {
        return Ok((whole(reader, leading)?, None));
    }
    let mut lines = Lines {
        path: path.to_path_buf(),
        reader,
        offset: leading.len() as u64,
        line: leading.iter().filter(|&&b| b == b'\n').count(),
        spans: spans_from.is_some_and(|from| len >= from),
        buf: Vec::new(),
        ready: Default::default(),
    };
    let Some((line, range, start)) = lines.next_line().map_err(io)? else {
        return Err(EventsError::Empty(path.to_path_buf()));
    };
    // The first line is a whole record in JSONL; a document spread over
    // lines (one pretty-printed object) is read whole.
    let is_record = std::str::from_utf8(&lines.buf[range.clone()])
        .is_ok_and(|text| serde_json::from_str::<&RawValue>(text).is_ok());
    if !is_record {
        let mut head = leading;
        head.extend_from_slice(&lines.buf);
        return Ok((whole(lines.reader, head)?, None));
    }
    let first = lines.record(line, &range, start)?;
    let spans = lines.spans;
    // The lines are read and their records parsed on a thread of their own,
    // a chunk ahead of the reader that converts them: the two halves of the
    // work overlap on two cores.
    let (send, receive) = std::sync::mpsc::sync_channel::<Vec<Result<Record, EventsError>>>(6);
    std::thread::Builder::new()
        .name("events-reader".into())
        .spawn(move || {
            let mut lines = lines;
            loop {
                lines.fill();
                let chunk: Vec<_> = lines.ready.drain(..).collect();
                // Stopped early (an error downstream): nobody listens.
                if chunk.is_empty() || send.send(chunk).is_err() {
                    return;
                }
            }
        })
        .map_err(io)?;
    let rest = receive.into_iter().flatten();
    let records: Records<'static> = Box::new(std::iter::once(Ok(first)).chain(rest));
    Ok((records, spans.then_some(file)))
}

/// What a Zstandard frame starts with: Codex compresses the rollouts of old
/// sessions (`rollout-*.jsonl.zst`).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The Zstandard frames of `source`, one after the other, decompressed to at
/// most `limit` bytes (a small file must not expand into all of memory).
/// Held whole: the places of a compressed file's records cannot be read
/// back, so its events keep their JSON.
fn decompress(mut source: impl BufRead, limit: u64) -> std::io::Result<Vec<u8>> {
    use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
    let invalid = |e: FrameDecoderError| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not a readable Zstandard file: {e}"),
        )
    };
    let mut bytes = Vec::new();
    while !source.fill_buf()?.is_empty() {
        let room = limit.saturating_add(1).saturating_sub(bytes.len() as u64);
        let frame = match ruzstd::decoding::StreamingDecoder::new(&mut source) {
            Ok(frame) => frame,
            // A skippable frame holds metadata, no data: its header is read,
            // its content passed over.
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                let length = u64::from(length);
                if std::io::copy(&mut (&mut source).take(length), &mut std::io::sink())? < length {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "not a readable Zstandard file: a skippable frame is cut short",
                    ));
                }
                continue;
            }
            Err(e) => return Err(invalid(e)),
        };
        frame.take(room).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("decompresses to more than {} MiB", limit >> 20),
            ));
        }
    }
    Ok(bytes)
}

/// JSONL records, one line at a time.
struct Lines {
    path: PathBuf,
    reader: BufReader<ReadAt>,
    /// Where the next line starts in the file.
    offset: u64,
    /// The number of the last line read.
    line: usize,
    /// Whether records carry their places.
    spans: bool,
    buf: Vec<u8>,
    /// The records of the last chunk read.
    ready: Vec<Result<Record, EventsError>>,
}

impl Lines {
    /// The next non-blank line: its number, the range of its trimmed text
    /// in `self.buf`, and where that text starts in the file.
    fn next_line(&mut self) -> std::io::Result<Option<(usize, std::ops::Range<usize>, u64)>> {
        loop {
            self.buf.clear();
            let n = self.reader.read_until(b'\n', &mut self.buf)?;
            if n == 0 {
                return Ok(None);
            }
            let start = self.offset;
            self.offset += n as u64;
            self.line += 1;
            if self.offset > MAX_EVENTS_FILE_BYTES {
                return Err(too_big());
            }
            let lead = self
                .buf
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
            let trail = self.buf[lead..]
                .iter()
                .rev()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
            if lead + trail < self.buf.len() {
                let range = lead..self.buf.len() - trail;
                return Ok(Some((self.line, range, start + lead as u64)));
            }
        }
    }

    /// The record of the line `line` whose text is `range` of the buffer.
    fn record(
        &self,
        line: usize,
        range: &std::ops::Range<usize>,
        start: u64,
    ) -> Result<Record, EventsError> {
        record(
            &self.path,
            self.spans,
            line,
            &self.buf[range.clone()],
            start,
        )
    }

    /// Read the next chunk of lines and parse their records.
    fn fill(&mut self) {
        const LINES: usize = 1024;
        const BYTES: usize = 4 << 20;
        let (mut lines, mut bytes) = (0, 0);
        while lines < LINES && bytes < BYTES {
            match self.next_line() {
                Ok(Some((line, range, start))) => {
                    lines += 1;
                    bytes += range.len();
                    let text = &self.buf[range];
                    self.ready
                        .push(record(&self.path, self.spans, line, text, start));
                }
                Ok(None) => break,
                Err(source) => {
                    self.ready.push(Err(EventsError::Io {
                        path: self.path.clone(),
                        source,
                    }));
                    break;
                }
            }
        }
    }
}

/// The record of line `line` of `path`, whose trimmed text is `text` and
/// starts at `start`. Its JSON is checked by the reader's parse, not here:
/// checking it twice would double the work of reading a large transcript.
fn record(
    path: &Path,
    spans: bool,
    line: usize,
    text: &[u8],
    start: u64,
) -> Result<Record, EventsError> {
    let text = std::str::from_utf8(text).map_err(|e| EventsError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("line {line} is not UTF-8: {e}"),
        ),
    })?;
    if spans {
        let span = RawSpan {
            offset: start,
            len: text.len() as u32,
        };
        return Ok(Record {
            line,
            json: Json::Line(text.into(), span),
        });
    }
    let raw = RawValue::from_string(text.to_string()).map_err(|e| malformed(path, line, &e))?;
    Ok(Record::inline(line, raw))
}

/// Reads of a shared file at a position of their own (the file stays open
/// for the records' JSON to be read back at theirs).
struct ReadAt {
    file: Arc<File>,
    at: u64,
}

impl ReadAt {
    fn new(file: Arc<File>) -> ReadAt {
        ReadAt { file, at: 0 }
    }
}

impl Read for ReadAt {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// The JSON of the record at `span` of `file`, read back; `None` if the
/// file no longer holds a JSON value there (the agent rewrote it).
pub(crate) fn read_back(file: &File, span: RawSpan) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let mut bytes = vec![0; span.len as usize];
    file.read_exact_at(&mut bytes, span.offset).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    serde_json::from_str::<&RawValue>(&text).ok()?;
    Some(text)
}

/// `path` opened for reading if it is a regular file of at most
/// [`MAX_EVENTS_FILE_BYTES`], and its length; opening does not wait on a
/// FIFO.
fn open_regular(path: &Path) -> std::io::Result<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > MAX_EVENTS_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "not a regular file of at most {} MiB",
                MAX_EVENTS_FILE_BYTES >> 20
            ),
        ));
    }
    Ok((file, meta.len()))
}

fn too_big() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "not a regular file of at most {} MiB",
            MAX_EVENTS_FILE_BYTES >> 20
        ),
    )
}

fn not_utf8(e: std::string::FromUtf8Error) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e)
}

/// `convert(index, item)` for every item, on up to one thread per core (in
/// chunks big enough to be worth a thread), results in order. Events parse
/// independently of each other, so large streams split across the cores.
pub(crate) fn parallel_map<T, U, F>(items: Vec<T>, convert: F) -> Vec<U>
where
    T: Send,
    U: Send,
    F: Fn(usize, T) -> U + Sync,
{
    const MIN_CHUNK: usize = 2048;
    let threads = match items.len() / MIN_CHUNK {
        0 | 1 => 1,
        chunks => crate::sys::parallel::cores().min(chunks),
    };
    if threads == 1 {
        return items
            .into_iter()
            .enumerate()
            .map(|(i, r)| convert(i, r))
            .collect();
    }
    let chunk = items.len().div_ceil(threads);
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut rest = items;
    while rest.len() > chunk {
        let tail = rest.split_off(chunk);
        chunks.push(rest);
        rest = tail;
    }
    chunks.push(rest);
    std::thread::scope(|s| {
        let convert = &convert;
        let handles: Vec<_> = chunks
            .into_iter()
            .enumerate()
            .map(|(c, records)| {
                s.spawn(move || {
                    records
                        .into_iter()
                        .enumerate()
                        .map(|(i, r)| convert(c * chunk + i, r))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruzstd::encoding::{compress_to_vec, CompressionLevel};

    #[test]
    fn frames_decompress_one_after_the_other() {
        let mut file = compress_to_vec(&b"{\"a\":1}\n"[..], CompressionLevel::Fastest);
        file.extend(compress_to_vec(
            &b"{\"b\":2}\n"[..],
            CompressionLevel::Fastest,
        ));
        let bytes = decompress(&file[..], 1 << 20).unwrap();
        assert_eq!(bytes, b"{\"a\":1}\n{\"b\":2}\n");
    }

    #[test]
    fn skippable_frames_are_passed_over_and_a_cut_one_is_an_error() {
        // Magic 0x184D2A50 (little-endian), length 3, content, then a frame.
        let skippable = [0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, b'x', b'y', b'z'];
        let frame = compress_to_vec(&b"{\"a\":1}\n"[..], CompressionLevel::Fastest);
        let file = [&skippable[..], &frame, &skippable].concat();
        assert_eq!(decompress(&file[..], 1 << 20).unwrap(), b"{\"a\":1}\n");
        let cut = [&frame[..], &skippable[..9]].concat();
        let e = decompress(&cut[..], 1 << 20).unwrap_err();
        assert!(e.to_string().contains("cut short"), "{e}");
    }

    #[test]
    fn a_small_file_cannot_expand_past_the_limit() {
        let zeros = vec![b' '; 1 << 20];
        let file = compress_to_vec(&zeros[..], CompressionLevel::Fastest);
        assert!(file.len() < 1 << 12, "{} bytes", file.len());
        let e = decompress(&file[..], 1 << 16).unwrap_err();
        assert!(e.to_string().contains("decompresses to more than"), "{e}");
        assert_eq!(decompress(&file[..], 1 << 20).unwrap().len(), 1 << 20);
    }

    #[test]
    fn a_broken_frame_is_an_error_not_a_panic() {
        let mut file = compress_to_vec(&b"{\"a\":1}\n"[..], CompressionLevel::Fastest);
        let e = decompress(&[0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xff][..], 1 << 20).unwrap_err();
        assert!(e.to_string().contains("Zstandard"), "{e}");
        file.truncate(file.len() - 3);
        assert!(decompress(&file[..], 1 << 20).is_err());
    }
}
