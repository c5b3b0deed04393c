//! ddtriage's compiled core: block reading, the two-tier literal prefilter and the link facts of
//! `analyzer/scan/blocks.py`, with the same answers to the byte.
//!
//! What crosses the boundary: Python hands over the literals once (`Matcher`), then per stream a
//! `Scan` either reads a plain file itself (by path, checked to be the file Python opened) or is
//! fed the blocks Python read (decompressed streams). Per block it hands back the block's buffer
//! as one `bytes` (what `Candidate._buf` holds) and one tuple per candidate line: (line number,
//! stream offset, start in the buffer, the line's raw bytes, facts only). Python never sees the
//! other lines. With the link-fact table (`Facts`, see `facts.rs`), a fact-only line is matched
//! here and comes back only when it holds facts, with them (a list of (kind, value) in place of
//! the facts-only flag). No thread is started, ever; the GIL is released while reading and searching.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Once};

use aho_corasick::{AhoCorasickBuilder, MatchKind};
use memchr::{memchr, memrchr};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};
use regex::bytes::Regex;

/// The core's own allocations (a finding's strings, a line's facts, a tally's rows: millions of
/// small ones in a storm) come from mimalloc; Python's objects still come from Python's allocator.
/// glibc's malloc and free were a tenth of a dense scan's time; with mimalloc a 1 GiB dense scan
/// took 14% less time. It starts no thread, so forked pools are safe.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod apis;
mod codes;
mod detect;
mod facts;
mod families;
mod findingjson;
mod fingerprint;
mod headers;
mod lines;
mod marshal;
mod native;
mod nodefacts;
mod prefilter;
mod stamps;
mod tally;
use facts::{Answer, FactTable, PidHeader, ProofTable, without_cr};
use nodefacts::NodeAgg;
use prefilter::{Core, Line};

const HISTORY_BYTES: usize = 64 << 10; // scan.blocks.HISTORY_BYTES

// ---------------------------------------------------------------------------------------------
// Panics: recorded by a quiet hook, turned into one ValueError (a read error to the engine).

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}
static HOOK: Once = Once::new();

fn install_hook() {
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
                (*s).to_string()
            } else if let Some(s) = info.payload().downcast_ref::<String>() {
                s.clone()
            } else {
                "panic".to_string()
            };
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{at}")));
        }));
    });
}

/// Run `f`; a panic inside becomes a ValueError naming `what` (the file) and the reason.
fn guarded<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            let why = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "panic".into());
            Err(PyValueError::new_err(format!(
                "internal error in the compiled core reading {what}: {why}"
            )))
        }
    }
}

fn count_nl(s: &[u8]) -> usize {
    bytecount::count(s, b'\n')
}

/// The compiled prefilter of one `Prefilter` (its literals, fact literals and patterns).
#[pyclass(frozen, module = "ddtriage_core")]
struct Matcher {
    core: Arc<Core>,
}

#[pymethods]
impl Matcher {
    #[new]
    #[pyo3(signature = (literals, fact_literals, patterns))]
    fn new(literals: Vec<Vec<u8>>, fact_literals: Vec<Vec<u8>>, patterns: Vec<Vec<u8>>) -> PyResult<Self> {
        let fact_literals: Vec<Vec<u8>> = fact_literals.into_iter().filter(|l| !literals.contains(l)).collect();
        install_hook();
        for lit in literals.iter().chain(fact_literals.iter()) {
            if lit.is_empty() || lit.contains(&b'\n') {
                return Err(PyValueError::new_err("a literal that is empty or holds a newline"));
            }
        }
        let n_full = literals.len();
        let all: Vec<&Vec<u8>> = literals.iter().chain(fact_literals.iter()).collect();
        let ac = if all.is_empty() {
            None
        } else {
            Some(
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(all)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?,
            )
        };
        let mut regexes = Vec::new();
        for p in patterns {
            let text = std::str::from_utf8(&p).map_err(|_| PyValueError::new_err("a pattern that is not UTF-8"))?;
            // Only what means the same in Python's `re` and Rust's `regex` (bytes, ASCII classes).
            if text.contains('$') || text.contains("(?") || text.contains("\\Z") || text.contains("{,") {
                return Err(PyValueError::new_err(format!(
                    "pattern {text:?} is not portable to the core"
                )));
            }
            let re = Regex::new(&format!("(?-u){text}")).map_err(|e| PyValueError::new_err(e.to_string()))?;
            regexes.push(re);
        }
        let literals = literals.into_iter().chain(fact_literals).collect();
        Ok(Matcher {
            core: Arc::new(Core::new(ac, n_full, regexes, literals)),
        })
    }

    /// `Prefilter.tiers` (sorted starts, the starts of fact-only lines), for the twin tests.
    fn tiers(&self, py: Python<'_>, buf: &[u8], begin: usize, end: usize) -> PyResult<(Vec<usize>, Vec<usize>)> {
        if begin > end || end > buf.len() {
            return Err(PyValueError::new_err("bad region"));
        }
        let core = self.core.clone();
        let lines = guarded("a buffer", || Ok(py.detach(|| core.tiers(buf, begin, end))))?;
        let starts = lines.iter().map(|l| l.start).collect();
        let facts = lines.iter().filter(|l| l.facts_only).map(|l| l.start).collect();
        Ok((starts, facts))
    }
}

// ---------------------------------------------------------------------------------------------
// One stream: `scan_stream`'s loop, block by block.

struct Plain {
    file: File,
    remaining: Option<u64>,
}

// ---------------------------------------------------------------------------------------------
// A block in parts: with `threads` > 1 (Python asks for it only where CPUs would be idle: one
// stream scanned alone), the prefilter and the fact lines of a big block are split among scoped
// threads, started per block and joined before it is handed back (no pool lives past a call, so
// forked workers are safe). Every line lies whole in one part, and parts are joined in order, so
// the answers are the same as in one piece.

const MAX_THREADS: usize = 8;
const PAR_BYTES: usize = 1 << 20; // a region smaller than this is searched in one piece
const PAR_LINES: usize = 2048; // fewer candidate lines than this are answered in one piece

type Cand = (i64, i64, usize, usize, bool);

/// `core.tiers(buf, begin, end)`, the region cut at line starts into `threads` parts searched at once.
fn tiers_in_parts(core: &Core, buf: &[u8], begin: usize, end: usize, threads: usize) -> Vec<Line> {
    // A pattern (not a literal) could match across a newline, hence across a cut: one piece.
    if threads <= 1 || end - begin < PAR_BYTES || !core.regexes.is_empty() {
        return core.tiers(buf, begin, end);
    }
    let mut cuts = vec![begin];
    for k in 1..threads {
        let at = begin + (end - begin) * k / threads;
        let at = memchr(b'\n', &buf[at..end]).map_or(end, |i| at + i + 1);
        if at > *cuts.last().expect("a first cut") && at < end {
            cuts.push(at);
        }
    }
    cuts.push(end);
    let parts: Vec<Vec<Line>> = std::thread::scope(|scope| {
        let rest: Vec<_> = cuts[1..]
            .windows(2)
            .map(|w| {
                let (a, b) = (w[0], w[1]);
                scope.spawn(move || core.tiers(buf, a, b))
            })
            .collect();
        let mut parts = vec![core.tiers(buf, cuts[0], cuts[1])];
        parts.extend(rest.into_iter().map(|h| h.join().expect("a prefilter thread")));
        parts
    });
    parts.concat()
}

/// `items.into_iter().map(f)`, in `threads` contiguous parts at once when there are `least` or more.
fn in_parts<T: Send, R: Send>(items: Vec<T>, threads: usize, least: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    if threads <= 1 || items.len() < least {
        return items.into_iter().map(f).collect();
    }
    let size = items.len().div_ceil(threads);
    let mut chunks: Vec<Vec<T>> = Vec::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        chunks.push(items.by_ref().take(size).collect());
    }
    let f = &f;
    std::thread::scope(|scope| {
        let mut chunks = chunks.into_iter();
        let first = chunks.next().unwrap_or_default();
        let rest: Vec<_> = chunks
            .map(|chunk| scope.spawn(move || chunk.into_iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out: Vec<R> = first.into_iter().map(f).collect();
        for h in rest {
            out.extend(h.join().expect("a fact thread"));
        }
        out
    })
}

/// What one step hands back: the bytes and lines to count before the candidates, the buffer, the
/// first line number it holds, the candidates, the lines to count after them, and whether the
/// stream is done.
struct Out<'py> {
    nbytes: usize,
    read_bytes: usize,
    lines_before: u64,
    buf: Option<Bound<'py, PyBytes>>,
    first_line_no: i64,
    cands: Vec<(i64, i64, usize, usize, bool)>,
    answers: Vec<Tier>, // per candidate with the fact table: what became of a fact-only line
    lines_after: u64,
    done: bool,
}

impl Out<'_> {
    /// A result that holds no block yet: `nbytes` taken so far, nothing found.
    fn empty(nbytes: usize) -> Self {
        Out {
            nbytes,
            read_bytes: 0,
            lines_before: 0,
            buf: None,
            first_line_no: 0,
            cands: Vec::new(),
            answers: Vec::new(),
            lines_after: 0,
            done: false,
        }
    }
}

/// What the core made of one candidate line, with the fact table.
enum Tier {
    /// A full candidate, or a fact-only line Python reads whole.
    Plain,
    /// A fact-only line with these facts (perhaps none): Python notes them and tells whether it
    /// is a proof of recovery, or finds its pid.
    Facts(Vec<(usize, String)>),
    /// A fact-only line answered whole: no proof, these facts (some), logged by this pid.
    Row(Vec<u8>, Vec<(usize, String)>),
    /// A line of neighbour errors and no code, read whole (`Counted::Built`).
    Related(Built),
}

/// What Python needs of a line of neighbour errors to note them as `LineObserver.line` would:
/// the pid and timestamp of its plog header, its facts, and (family, code text) of each error.
struct Built {
    pid: Vec<u8>,
    stamp: String,
    facts: Vec<(usize, String)>,
    errors: Vec<(usize, String)>,
}

/// What a stream past its cap of related errors (`observations.MAX_RELATED`) does with a line
/// of neighbour errors and no code (`detect.observer.LineObserver._related`): its errors are only
/// counted, so the core answers it whole, as a fact-only row, where Python would come to the same.
struct Related {
    codes: Arc<codes::Codes>,
    families: Arc<families::FamilyTable>,
    after: i64, // only lines after this one (a later piece of that line is still built)
    // lines up to `after` (all, before the cap is reached): read whole for Python to note
    // (`Scan.read_related`); false: Python reads them
    build: bool,
}

/// What became of a full candidate past the cap of related errors.
enum Counted {
    /// Python's: a code (a finding), a possible proof, no plog header, or a line or pattern the
    /// core does not read alike.
    Python,
    /// This many neighbour errors (perhaps none), no facts: nothing for Python to do.
    Nothing(u64),
    /// This many neighbour errors, and the line's facts as a row of this pid.
    Row(u64, Vec<u8>, Vec<(usize, String)>),
    /// Before the cap: neighbour errors (some) for Python to note, read whole.
    Built(Built),
}

/// `LineObserver.line` and the engine's code search on a full candidate whose related errors are
/// only counted, where they come to the same without Python: the line is printable ASCII with a
/// plog header (its stamp has a year: the clock is not read), holds no code and cannot be a proof;
/// its facts are noted as a fact-only line's are, and its neighbour errors are counted.
///
/// With `build` (a line before the cap), a line with neighbour errors is `Built` instead: Python
/// notes them from what the core read, without reading the line again; one without is answered
/// as past the cap (nothing to note but its facts). A line whose timestamp the core cannot read
/// as Python does (no `PLOG_PATTERN`) is Python's.
fn counted_line(
    r: &Related,
    table: &FactTable,
    proofs: Option<&ProofTable>,
    header: Option<&PidHeader>,
    raw: &[u8],
    build: bool,
) -> Counted {
    let line = without_cr(raw);
    let Some(pid) = header.and_then(|h| h.pid(line)) else {
        return Counted::Python;
    };
    match r.codes.find(line) {
        Some(hits) if hits.is_empty() => {}
        _ => return Counted::Python,
    }
    // Without proof literals Python asks `RecoveryTable.maybe_in`: so would the core's table
    if proofs.is_none_or(|p| p.maybe(line)) {
        return Counted::Python;
    }
    let Answer::Facts(found) = table.find(raw) else {
        return Counted::Python;
    };
    let Some(errors) = r.families.find(raw) else {
        return Counted::Python;
    };
    let n = errors.len() as u64;
    if build && n > 0 {
        let Some(stamp) = header.and_then(|h| h.stamp(line)) else {
            return Counted::Python;
        };
        return Counted::Built(Built {
            pid: pid.to_vec(),
            stamp,
            facts: found,
            errors,
        });
    }
    if found.is_empty() {
        Counted::Nothing(n)
    } else {
        Counted::Row(n, pid.to_vec(), found)
    }
}

#[pyclass(module = "ddtriage_core")]
struct Scan {
    core: Arc<Core>,
    facts: Option<Arc<FactTable>>, // fact-only lines are answered here; those without facts dropped
    proofs: Option<Arc<ProofTable>>, // a fact-only line that may be a proof goes to Python
    header: Option<Arc<PidHeader>>, // with `rows`: fact-only lines are answered whole (pid, facts)
    agg: Option<NodeAgg>,          // with `rows`: the facts of those lines, noted here
    related: Option<Related>,      // once the stream's related errors are past their cap: lines only counted here
    related_counted: u64,          // the neighbour errors of those lines (Python adds them to `related_dropped`)
    threads: usize,                // threads a block is searched and answered in (1: this one only)
    block_size: usize,
    max_line: usize,
    name: String,
    history: Vec<u8>,
    hist_nl: usize,
    pending: Vec<u8>,
    line_no: i64,
    offset: i64,
    plain: Option<Plain>,
    error: Option<io::Error>,
    done: bool,
    poisoned: bool,
    native: bool, // blocks go to the engine in the core (`Block`), not to Python as tuples
}

/// The result of scanning one buffer (history + pending + chunk) already in memory.
enum Step {
    /// No newline, line still short: everything after `begin` is pending.
    Carry,
    /// A fragment of a line too long to keep: buf[begin..cut] is scanned on its own.
    Fragment { cut: usize, lines: Vec<Line> },
    /// Complete lines in buf[begin..end].
    Lines {
        end: usize,
        lines: Vec<Line>,
        first_line_no: i64,
        numbers: Vec<i64>,
        count: u64,
    },
}

impl Scan {
    fn number(lines: &[Line], buf: &[u8], begin: usize, mut line_no: i64) -> Vec<i64> {
        let mut counted = begin;
        lines
            .iter()
            .map(|l| {
                line_no += count_nl(&buf[counted..l.start]) as i64;
                counted = l.start;
                line_no
            })
            .collect()
    }

    /// The core of the loop over one buffer, without the GIL.
    fn step(
        core: &Core,
        buf: &[u8],
        begin: usize,
        max_line: usize,
        line_no: i64,
        hist_nl: usize,
        threads: usize,
    ) -> Step {
        match memrchr(b'\n', &buf[begin..]) {
            None => {
                if buf.len() - begin < max_line {
                    return Step::Carry;
                }
                let cut = core.fragment_cut(buf, begin);
                let fragment = &buf[begin..cut];
                let lines = core.tiers(fragment, 0, fragment.len());
                Step::Fragment { cut, lines }
            }
            Some(i) => {
                let end = begin + i + 1;
                let lines = tiers_in_parts(core, buf, begin, end, threads);
                let numbers = Self::number(&lines, buf, begin, line_no);
                // Every byte counted once: up to the last candidate while numbering, then the rest.
                let count = match (lines.last(), numbers.last()) {
                    (Some(l), Some(&n)) => (n - line_no) as u64 + count_nl(&buf[l.start..end]) as u64,
                    _ => count_nl(&buf[begin..end]) as u64,
                };
                Step::Lines {
                    end,
                    lines,
                    first_line_no: line_no - hist_nl as i64,
                    numbers,
                    count,
                }
            }
        }
    }

    /// Scan `buf` (history + pending + a new chunk of `nbytes`), update the state, say what to yield.
    fn process<'py>(&mut self, py: Python<'py>, buf: Bound<'py, PyBytes>, nbytes: usize) -> PyResult<Out<'py>> {
        if self.poisoned {
            panic!("poisoned for a test");
        }
        let begin = self.history.len();
        let data = buf.as_bytes();
        let core = self.core.clone();
        let (max_line, line_no, hist_nl) = (self.max_line, self.line_no, self.hist_nl);
        let threads = self.threads;
        let step = py.detach(|| Self::step(&core, data, begin, max_line, line_no, hist_nl, threads));
        let mut out = Out::empty(nbytes);
        match step {
            Step::Carry => {
                self.pending = data[begin..].to_vec();
            }
            Step::Fragment { cut, lines } => {
                let fragment = &data[begin..cut];
                let numbers = Self::number(&lines, fragment, 0, self.line_no);
                out.first_line_no = self.line_no;
                out.cands = lines
                    .iter()
                    .zip(numbers)
                    .map(|(l, n)| (n, self.offset + l.start as i64, l.start, l.stop, l.facts_only))
                    .collect();
                self.answer(py, fragment, &mut out, false);
                if !out.cands.is_empty() {
                    out.buf = Some(PyBytes::new(py, fragment));
                }
                self.offset += fragment.len() as i64;
                self.pending = data[cut..].to_vec();
                self.history.clear();
                self.hist_nl = 0;
            }
            Step::Lines {
                end,
                lines,
                first_line_no,
                numbers,
                count,
            } => {
                out.first_line_no = first_line_no;
                out.cands = lines
                    .iter()
                    .zip(numbers)
                    .map(|(l, n)| (n, self.offset + (l.start - begin) as i64, l.start, l.stop, l.facts_only))
                    .collect();
                self.answer(py, data, &mut out, true);
                out.lines_after = count;
                self.line_no += count as i64;
                self.offset += (end - begin) as i64;
                self.pending = data[end..].to_vec();
                // _tail_lines: the complete lines in the last HISTORY_BYTES of the region
                let tail = if end - begin <= HISTORY_BYTES {
                    &data[begin..end]
                } else {
                    let from = end - HISTORY_BYTES;
                    let at = memchr(b'\n', &data[from..end]).map_or(0, |i| from + i + 1);
                    &data[at..end]
                };
                self.history = tail.to_vec();
                self.hist_nl = count_nl(&self.history);
                if !out.cands.is_empty() {
                    out.buf = Some(buf);
                }
            }
        }
        Ok(out)
    }

    /// With the fact table: the facts of each fact-only candidate of `out` (in `data`), found
    /// without the GIL; a line without facts is dropped (Python never sees it). Past the cap of
    /// related errors (`count_related`), also each full candidate of `whole` lines that holds
    /// neighbour errors and no code: counted, and a row if it has facts.
    fn answer(&mut self, py: Python<'_>, data: &[u8], out: &mut Out<'_>, whole: bool) {
        let Some(table) = &self.facts else { return };
        let related = self.related.as_ref().filter(|_| whole && self.header.is_some());
        if !out
            .cands
            .iter()
            .any(|c| c.4 || related.is_some_and(|r| r.build || c.0 > r.after))
        {
            return;
        }
        let cands = std::mem::take(&mut out.cands);
        let (proofs, header) = (self.proofs.as_deref(), self.header.as_deref());
        let agg = &mut self.agg;
        let threads = self.threads;
        let counted = std::sync::atomic::AtomicU64::new(0);
        let (cands, answers): (Vec<_>, Vec<_>) = py.detach(|| {
            let judge = |c: Cand| {
                if !c.4 {
                    return match related {
                        Some(r) if r.build || c.0 > r.after => {
                            match counted_line(r, table, proofs, header, &data[c.2..c.3], c.0 <= r.after) {
                                Counted::Python => Some((c, Tier::Plain)),
                                Counted::Built(built) => Some((c, Tier::Related(built))),
                                Counted::Nothing(n) => {
                                    counted.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                                    None
                                }
                                Counted::Row(n, pid, found) => {
                                    counted.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                                    Some((c, Tier::Row(pid, found)))
                                }
                            }
                        }
                        _ => Some((c, Tier::Plain)),
                    };
                }
                let raw = &data[c.2..c.3];
                let Answer::Facts(found) = table.find(raw) else {
                    return Some((c, Tier::Plain));
                };
                // What `LineObserver.facts_only` does with the line: a possible proof is
                // Python's to tell; else a line without facts is nothing, and one with facts
                // and a plog header is a row.
                let line = without_cr(raw);
                if proofs.is_some_and(|p| p.maybe(line)) {
                    return Some((c, Tier::Facts(found)));
                }
                if found.is_empty() {
                    return None;
                }
                match header.and_then(|h| h.pid(line)) {
                    Some(pid) => Some((c, Tier::Row(pid.to_vec(), found))),
                    None => Some((c, Tier::Facts(found))),
                }
            };
            let (cands, answers): (Vec<_>, Vec<_>) =
                in_parts(cands, threads, PAR_LINES, judge).into_iter().flatten().unzip();
            // The node's facts of the rows are noted here; Python only hears what later lines
            // of the same process look back at (`Scan.to_py`).
            if let Some(agg) = agg.as_mut() {
                for answer in &answers {
                    if let Tier::Row(pid, found) = answer {
                        agg.note(found, std::str::from_utf8(pid).ok());
                    }
                }
            }
            (cands, answers)
        });
        self.related_counted += counted.into_inner();
        out.cands = cands;
        out.answers = answers;
    }

    /// The last line (no newline at the end of the stream): scanned after history.
    fn finish<'py>(&mut self, py: Python<'py>, mut out: Out<'py>) -> PyResult<Out<'py>> {
        self.done = true;
        out.done = true;
        if self.pending.is_empty() {
            return Ok(out);
        }
        let mut joined = Vec::with_capacity(self.history.len() + self.pending.len());
        joined.extend_from_slice(&self.history);
        joined.extend_from_slice(&self.pending);
        let begin = self.history.len();
        let core = self.core.clone();
        let lines = py.detach(|| core.tiers(&joined, begin, joined.len()));
        let numbers = Self::number(&lines, &joined, begin, self.line_no);
        out.first_line_no = self.line_no - self.hist_nl as i64;
        out.cands = lines
            .iter()
            .zip(numbers)
            .map(|(l, n)| (n, self.offset + (l.start - begin) as i64, l.start, l.stop, l.facts_only))
            .collect();
        self.answer(py, &joined, &mut out, true);
        // The lines after earlier candidates of `out` (a block of no candidates) were counted before.
        out.lines_before += out.lines_after;
        out.lines_after = 1;
        out.buf = if out.cands.is_empty() {
            None
        } else {
            Some(PyBytes::new(py, &joined))
        };
        self.pending.clear();
        Ok(out)
    }

    fn to_py<'py>(&self, py: Python<'py>, out: Out<'py>) -> PyResult<Bound<'py, PyTuple>> {
        if self.native {
            return self.to_block(py, out);
        }
        let cands = PyList::empty(py);
        if let Some(buf) = &out.buf {
            let data = buf.as_bytes();
            let facts_of = |found: &[(usize, String)]| -> PyResult<Bound<'py, PyList>> {
                let list = PyList::empty(py);
                if let Some(table) = &self.facts {
                    for (k, value) in found {
                        list.append((PyString::intern(py, &table.ids[*k]), value))?;
                    }
                }
                Ok(list)
            };
            // Consecutive rows cross as one entry: (last line, its offset, its start, b"", a tuple
            // of (pid, ((kind, value, line), ...)): per process, the last value of each kind, the
            // `recent` facts that later lines look back at).
            let mut run = Run::default();
            let mut last = (0i64, 0i64, 0usize);
            for (i, &(n, off, start, stop, facts_only)) in out.cands.iter().enumerate() {
                // False: a full candidate; True: a fact-only line Python reads; a list: its facts
                let tier: Bound<'py, PyAny> = match out.answers.get(i) {
                    Some(Tier::Row(pid, found)) => {
                        run.add(pid, found, n);
                        last = (n, off, start);
                        continue;
                    }
                    Some(Tier::Facts(found)) => facts_of(found)?.into_any(),
                    Some(Tier::Related(built)) => {
                        let errors = PyList::empty(py);
                        for (k, code) in &built.errors {
                            errors.append((k, code))?;
                        }
                        let row = PyDict::new(py);
                        row.set_item(intern!(py, "pid"), std::str::from_utf8(&built.pid).unwrap_or_default())?;
                        row.set_item(intern!(py, "at"), &built.stamp)?;
                        row.set_item(intern!(py, "facts"), facts_of(&built.facts)?)?;
                        row.set_item(intern!(py, "errors"), errors)?;
                        row.into_any()
                    }
                    _ => PyBool::new(py, facts_only).to_owned().into_any(),
                };
                if !run.is_empty() {
                    let rows = self.run_to_py(py, std::mem::take(&mut run))?;
                    cands.append((last.0, last.1, last.2, PyBytes::new(py, b""), rows))?;
                }
                let raw = PyBytes::new(py, &data[start..stop]);
                cands.append((n, off, start, raw, tier))?;
            }
            if !run.is_empty() {
                let rows = self.run_to_py(py, run)?;
                cands.append((last.0, last.1, last.2, PyBytes::new(py, b""), rows))?;
            }
        }
        let buf: Bound<'py, PyAny> = match out.buf {
            Some(b) => b.into_any(),
            None => py.None().into_bound(py),
        };
        (
            out.nbytes,
            out.read_bytes,
            out.lines_before,
            buf,
            out.first_line_no,
            cands,
            out.lines_after,
            out.done,
        )
            .into_pyobject(py)
    }

    /// `to_py` in native mode: (bytes, bytes read, lines before, the `Block` or None, its first
    /// line number, None, lines after, done).
    fn to_block<'py>(&self, py: Python<'py>, out: Out<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let block: Bound<'py, PyAny> = match out.buf {
            Some(buf) if !out.cands.is_empty() => {
                let tiers = out
                    .answers
                    .into_iter()
                    .map(|t| match t {
                        Tier::Facts(f) => detect::Tier::Facts(f),
                        Tier::Row(pid, f) => detect::Tier::Row(pid, f),
                        Tier::Plain | Tier::Related(_) => detect::Tier::Plain,
                    })
                    .collect();
                Bound::new(
                    py,
                    native::Block::new(buf.unbind(), out.first_line_no, out.cands, tiers),
                )?
                .into_any()
            }
            _ => py.None().into_bound(py),
        };
        (
            out.nbytes,
            out.read_bytes,
            out.lines_before,
            block,
            out.first_line_no,
            py.None(),
            out.lines_after,
            out.done,
        )
            .into_pyobject(py)
    }

    /// A run of rows as Python applies it: (pid, ((kind, value, line), ...)) per process.
    fn run_to_py<'py>(&self, py: Python<'py>, run: Run) -> PyResult<Bound<'py, PyTuple>> {
        let ids = &self.facts.as_ref().expect("rows come with the fact table").ids;
        let mut out = Vec::with_capacity(run.pids.len());
        for (pid, kinds) in run.pids {
            let pid = std::str::from_utf8(&pid).unwrap_or_default();
            let mut updates = Vec::with_capacity(kinds.len());
            for (k, (value, line)) in kinds {
                updates.push((PyString::intern(py, &ids[k]), value, line).into_pyobject(py)?);
            }
            out.push((pid, PyTuple::new(py, updates)?).into_pyobject(py)?);
        }
        PyTuple::new(py, out)
    }

    /// A new buffer: history + pending + up to `want` bytes read from the plain file.
    fn read_block<'py>(&mut self, py: Python<'py>) -> PyResult<(Bound<'py, PyBytes>, usize)> {
        let head = self.history.len() + self.pending.len();
        let plain = self.plain.as_mut().expect("a plain file");
        let want = match plain.remaining {
            Some(r) => std::cmp::min(r, self.block_size as u64) as usize,
            None => self.block_size,
        };
        // A bytes object of the full size, filled in place (no zeroing, no copy); shrunk at the end.
        let ptr = unsafe { pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), (head + want) as isize) };
        if ptr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let data = unsafe { pyo3::ffi::PyBytes_AsString(ptr) as *mut u8 };
        let dst = unsafe { std::slice::from_raw_parts_mut(data, head + want) };
        dst[..self.history.len()].copy_from_slice(&self.history);
        dst[self.history.len()..head].copy_from_slice(&self.pending);
        let file = &mut plain.file;
        let (got, err) = py.detach(move || {
            let mut got = 0;
            while got < want {
                match file.read(&mut dst[head + got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return (got, Some(e)),
                }
            }
            (got, None)
        });
        if let Some(r) = plain.remaining.as_mut() {
            *r -= got as u64;
        }
        if let Some(e) = err {
            self.error = Some(e);
        }
        let mut obj = ptr;
        if got < want && unsafe { _PyBytes_Resize(&mut obj, (head + got) as isize) } != 0 {
            return Err(PyErr::fetch(py));
        }
        let bytes = unsafe { Bound::from_owned_ptr(py, obj).cast_into_unchecked::<PyBytes>() };
        Ok((bytes, got))
    }

    fn os_error(&self, py: Python<'_>, e: &io::Error) -> PyErr {
        match e.raw_os_error() {
            Some(code) => {
                let text = py
                    .import("os")
                    .and_then(|os| os.call_method1("strerror", (code,)))
                    .and_then(|s| s.extract::<String>())
                    .unwrap_or_else(|_| e.to_string());
                PyOSError::new_err((code, text, self.name.clone()))
            }
            None => PyOSError::new_err(e.to_string()),
        }
    }
}

/// Rows of one run, collapsed to what `recent` keeps: per pid (in the order first met), per kind
/// (in the order first met), the last value and its line.
#[derive(Default)]
struct Run {
    pids: Vec<(Vec<u8>, Vec<Latest>)>,
}

/// A kind's last value in a run, and its line.
type Latest = (usize, (String, i64));

impl Run {
    fn add(&mut self, pid: &[u8], found: &[(usize, String)], line: i64) {
        let at = match self.pids.iter().position(|(p, _)| p == pid) {
            Some(at) => at,
            None => {
                self.pids.push((pid.to_vec(), Vec::new()));
                self.pids.len() - 1
            }
        };
        let kinds = &mut self.pids[at].1;
        for (k, value) in found {
            match kinds.iter_mut().find(|(kind, _)| kind == k) {
                Some(slot) => slot.1 = (value.clone(), line),
                None => kinds.push((*k, (value.clone(), line))),
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.pids.is_empty()
    }
}

/// `Scan.node_facts`: (roles with counts, clusters, local ips, listen, remote, remote clusters,
/// remote ips, request ids, devices, pids, versions per kind).
type NodeFactsOut = (
    Vec<(String, u64)>,
    Vec<(String, Option<String>, Option<String>)>,
    Vec<String>,
    Vec<String>,
    Vec<(Option<String>, Option<String>)>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<(String, Vec<String>)>,
);

/// What a node's facts gathered so far are, as `NodeFacts.from_core` reads them (None: nothing
/// noted); `agg` starts afresh.
fn taken_facts(agg: &mut NodeAgg) -> Option<NodeFactsOut> {
    if agg.noted == 0 {
        return None;
    }
    let fresh = agg.fresh();
    let parts = std::mem::replace(agg, fresh);
    let list = |set: foldhash::HashSet<String>| set.into_iter().collect::<Vec<_>>();
    Some((
        parts.roles.into_iter().collect(),
        parts.clusters.into_iter().collect(),
        list(parts.local_ips),
        list(parts.listen),
        parts.remote.into_iter().collect(),
        list(parts.remote_clusters),
        list(parts.remote_ips),
        list(parts.req_ids),
        list(parts.devices),
        list(parts.pids),
        parts.versions.into_iter().map(|(k, v)| (k, list(v))).collect(),
    ))
}

unsafe extern "C" {
    fn _PyBytes_Resize(bytes: *mut *mut pyo3::ffi::PyObject, newsize: pyo3::ffi::Py_ssize_t) -> std::os::raw::c_int;
}

#[pymethods]
impl Scan {
    #[new]
    #[pyo3(signature = (matcher, block_size, max_line, history, name = String::from("a stream"), facts = None,
                        rows = false, version_kinds = Vec::new(), threads = 1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        matcher: &Matcher,
        block_size: usize,
        max_line: usize,
        history: &[u8],
        name: String,
        facts: Option<&Facts>,
        rows: bool,
        version_kinds: Vec<String>,
        threads: usize,
    ) -> PyResult<Self> {
        if block_size == 0 {
            return Err(PyValueError::new_err("block_size must be positive"));
        }
        let header = facts.and_then(|f| f.header.clone()).filter(|_| rows);
        let agg = match (facts, &header) {
            (Some(f), Some(_)) => Some(NodeAgg::new(&f.table.ids, &version_kinds)),
            _ => None,
        };
        Ok(Scan {
            core: matcher.core.clone(),
            facts: facts.map(|f| f.table.clone()),
            proofs: facts.and_then(|f| f.proofs.clone()),
            header,
            agg,
            related: None,
            related_counted: 0,
            threads: threads.clamp(1, MAX_THREADS),
            block_size,
            max_line,
            name,
            history: history.to_vec(),
            hist_nl: count_nl(history),
            pending: Vec::new(),
            line_no: 1,
            offset: 0,
            plain: None,
            error: None,
            done: false,
            poisoned: false,
            native: false,
        })
    }

    /// From now on, hand each block over whole (`Block`, for the engine in the core: `Stream.block`)
    /// instead of a tuple per candidate line.
    fn native(&mut self) {
        self.native = true;
    }

    /// From now on, read the rest of the stream from the regular file at `path` itself, from
    /// `offset`, at most `limit` bytes: only if it is the file (`dev`, `ino`) Python has open.
    #[pyo3(signature = (path, dev, ino, offset, limit = None))]
    fn open(&mut self, path: &str, dev: u64, ino: u64, offset: u64, limit: Option<u64>) -> PyResult<bool> {
        let name = self.name.clone();
        guarded(&name, || {
            let Ok(mut file) = File::open(path) else {
                return Ok(false);
            };
            let Ok(meta) = file.metadata() else { return Ok(false) };
            if meta.dev() != dev || meta.ino() != ino || !meta.is_file() {
                return Ok(false);
            }
            if file.seek(SeekFrom::Start(offset)).is_err() {
                return Ok(false);
            }
            self.plain = Some(Plain { file, remaining: limit });
            self.name = path.to_string();
            Ok(true)
        })
    }

    /// Read blocks from the plain file until one has candidates or the stream ends. A read error
    /// ends the stream like its end would (the last line is still scanned); `error()` then has it.
    fn pull<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let name = self.name.clone();
        guarded(&name, || {
            if self.plain.is_none() || self.done {
                return Err(PyValueError::new_err("no plain file to read, or the stream is done"));
            }
            let (mut nbytes, mut read_bytes, mut lines) = (0usize, 0usize, 0u64);
            loop {
                // After a read error nothing more is read: the stream ends there (as a SafeStream's does).
                let (buf, got) = if self.error.is_some() {
                    (PyBytes::new(py, b""), 0)
                } else {
                    self.read_block(py)?
                };
                read_bytes += got;
                if got == 0 {
                    let out = Out {
                        read_bytes,
                        lines_before: lines,
                        ..Out::empty(nbytes)
                    };
                    let out = self.finish(py, out)?;
                    return self.to_py(py, out);
                }
                nbytes += got;
                let mut out = self.process(py, buf, got)?;
                out.nbytes = nbytes;
                out.read_bytes = read_bytes;
                out.lines_before = lines;
                if !out.cands.is_empty() {
                    return self.to_py(py, out);
                }
                lines += out.lines_after;
                if self.error.is_some() {
                    let out = Out {
                        lines_before: lines,
                        lines_after: 0,
                        nbytes,
                        read_bytes,
                        ..out
                    };
                    let out = self.finish(py, out)?;
                    return self.to_py(py, out);
                }
            }
        })
    }

    /// One chunk that Python read (b"" at the end of the stream, or after a read error).
    fn feed<'py>(&mut self, py: Python<'py>, chunk: Bound<'py, PyBytes>) -> PyResult<Bound<'py, PyTuple>> {
        let name = self.name.clone();
        guarded(&name, || {
            if self.done {
                return Err(PyValueError::new_err("the stream is done"));
            }
            let n = chunk.as_bytes().len();
            let empty = Out::empty(0);
            if n == 0 {
                let out = self.finish(py, empty)?;
                return self.to_py(py, out);
            }
            let head = self.history.len() + self.pending.len();
            let buf = if head == 0 {
                chunk
            } else {
                let c = chunk.as_bytes();
                PyBytes::new_with(py, head + n, |dst| {
                    dst[..self.history.len()].copy_from_slice(&self.history);
                    dst[self.history.len()..head].copy_from_slice(&self.pending);
                    dst[head..].copy_from_slice(c);
                    Ok(())
                })?
            };
            let out = self.process(py, buf, n)?;
            self.to_py(py, out)
        })
    }

    /// The node facts of the rows answered so far, as `NodeFacts.from_core` reads them, or None
    /// when there were none; the next call starts afresh.
    #[allow(clippy::type_complexity)]
    fn node_facts(&mut self) -> Option<NodeFactsOut> {
        taken_facts(self.agg.as_mut()?)
    }

    /// From now on, answer the lines after `after` that hold neighbour errors and no code: the
    /// stream's related errors are past their cap, so Python would only count them
    /// (`related_counted`). Only with the fact table and rows; else nothing changes.
    fn count_related(&mut self, codes: &Codes, families: &Families, after: i64) {
        self.related = Some(Related {
            codes: codes.codes.clone(),
            families: families.table.clone(),
            after,
            build: self.related.as_ref().is_some_and(|r| r.build),
        });
    }

    /// Until `count_related`, answer each line that holds neighbour errors and no code, where
    /// the core reads it as Python would (`counted_line`), as a dict of its header's `pid` and
    /// timestamp (`at`), its `facts` and its `errors` ((family index, code text), in family
    /// order), for Python to note (`LineObserver.related_row`); such a line without errors is
    /// a fact-only row, or nothing. Only with the fact table and rows; else nothing changes.
    fn read_related(&mut self, codes: &Codes, families: &Families) {
        self.related = Some(Related {
            codes: codes.codes.clone(),
            families: families.table.clone(),
            after: i64::MAX,
            build: true,
        });
    }

    /// The neighbour errors of the lines answered past the cap so far; the next call starts afresh.
    fn related_counted(&mut self) -> u64 {
        std::mem::take(&mut self.related_counted)
    }

    /// The read error that ended a plain file early, as the OSError Python would raise.
    fn error(&mut self, py: Python<'_>) -> Option<PyErr> {
        self.error.take().map(|e| self.os_error(py, &e))
    }

    /// Make the next step panic (tests prove no panic reaches the user).
    fn _poison(&mut self) {
        self.poisoned = true;
    }
}

/// The link-fact table (`LinkFactMatcher.core_table()`), compiled once; `Scan(facts=...)` answers
/// fact-only lines with it.
///
/// With the proofs of recovery (`RecoveryTable.core_table()`), a fact-only line that may be a proof
/// is handed to Python even without facts. With the plog header pattern too (`core.headers.
/// PLOG_PID_PATTERN`), `Scan(rows=True)` answers the other fact-only lines whole: a row of (line,
/// pid, facts) that Python only notes.
#[pyclass(frozen, module = "ddtriage_core")]
struct Facts {
    table: Arc<FactTable>,
    proofs: Option<Arc<ProofTable>>,
    header: Option<Arc<PidHeader>>,
}

#[pymethods]
impl Facts {
    #[new]
    #[pyo3(signature = (rows, proofs = None, header = None))]
    fn new(rows: Vec<facts::Row>, proofs: Option<Vec<facts::ProofRow>>, header: Option<String>) -> PyResult<Self> {
        install_hook();
        guarded("the link-fact table", || {
            let table = FactTable::new(rows).map_err(PyValueError::new_err)?;
            let proofs = match proofs {
                Some(p) => Some(Arc::new(ProofTable::new(p).map_err(PyValueError::new_err)?)),
                None => None,
            };
            let header = match (&proofs, header) {
                (Some(_), Some(h)) => Some(Arc::new(PidHeader::new(&h).map_err(PyValueError::new_err)?)),
                _ => None,
            };
            Ok(Facts {
                table: Arc::new(table),
                proofs,
                header,
            })
        })
    }

    /// Whether a (printable ASCII) line may be a proof of recovery (the twin tests ask).
    fn maybe_proof(&self, raw: &[u8]) -> bool {
        self.proofs.as_ref().is_some_and(|p| p.maybe(without_cr(raw)))
    }

    /// The pid of a line's plog header, or None (the twin tests ask).
    fn header_pid(&self, raw: &[u8]) -> Option<String> {
        let header = self.header.as_ref()?;
        header
            .pid(without_cr(raw))
            .map(|p| String::from_utf8_lossy(p).into_owned())
    }

    /// Whether the header's pid is read by hand (`facts::PLOG_PATTERN`), not by regex captures:
    /// a test asks, so that a changed plog grammar does not quietly slow every fact line.
    #[getter]
    fn header_by_hand(&self) -> bool {
        self.header.as_ref().is_some_and(|h| h.by_hand())
    }

    /// The facts of one raw line, or None when Python must decide (the twin tests ask).
    fn find(&self, raw: &[u8]) -> PyResult<Option<Vec<(String, String)>>> {
        // Not without the GIL: a line takes microseconds, and giving the GIL up lets a thread
        // that scans ahead take it for up to a switch interval.
        let answer = guarded("a line", || Ok(self.table.find(raw)))?;
        Ok(match answer {
            Answer::Python => None,
            Answer::Facts(f) => Some(f.into_iter().map(|(k, v)| (self.table.ids[k].clone(), v)).collect()),
        })
    }

    /// (kind, why) of each kind whose patterns the core leaves to Python.
    #[getter]
    fn not_portable(&self) -> Vec<(String, String)> {
        self.table.not_portable.clone()
    }
}

/// A rule's `nearby` regex in Rust's linear-time engine (issue #17): built only when it means the
/// same as in Python (`facts::unportable`, else a ValueError saying why), and asked only about
/// text of printable ASCII, tabs and newlines; any other text is Python's (None).
#[pyclass(frozen, module = "ddtriage_core")]
struct Nearby {
    re: Regex,
}

#[pymethods]
impl Nearby {
    #[new]
    fn new(pattern: &str) -> PyResult<Self> {
        if let Some(why) = facts::unportable(pattern) {
            return Err(PyValueError::new_err(why));
        }
        let re = Regex::new(&format!("(?-u){pattern}"))
            .map_err(|e| PyValueError::new_err(e.to_string().lines().last().unwrap_or("").trim().to_string()))?;
        Ok(Nearby { re })
    }

    /// Whether the regex matches somewhere in `text`, or None when Python must answer.
    fn search(&self, text: &Bound<'_, PyString>) -> PyResult<Option<bool>> {
        // a lone surrogate (an envelope's `\udcff` escape) has no UTF-8: Python's
        let Ok(text) = text.to_str() else { return Ok(None) };
        let bytes = text.as_bytes();
        // Python's `$` also matches before a final newline; Rust's does not.
        if bytes.last() == Some(&b'\n') {
            return Ok(None);
        }
        let odd = bytes.iter().fold(0u8, |acc, &b| {
            acc | ((b.wrapping_sub(0x20) >= 0x5F) & (b != b'\t') & (b != b'\n')) as u8
        });
        if odd != 0 {
            return Ok(None);
        }
        // with the GIL held, as `Facts.find`: one finding's lines take microseconds
        guarded("a nearby regex", || Ok(Some(self.re.is_match(bytes))))
    }
}

/// The plog header of a record (`core.headers.parse_header`; see `headers.rs`).
#[pyclass(frozen, module = "ddtriage_core")]
struct PlogHeaders {
    headers: headers::PlogHeaders,
}

#[pymethods]
impl PlogHeaders {
    #[new]
    fn new(head: &str, tails: Vec<String>) -> PyResult<Self> {
        install_hook();
        guarded("the plog header grammar", || {
            let headers = headers::PlogHeaders::new(head, &tails).map_err(PyValueError::new_err)?;
            Ok(PlogHeaders { headers })
        })
    }

    /// (timestamp, pid, tid, func, message start, start, the date shows again) of the line's
    /// plog header, or None where Python reads the line.
    fn read(&self, line: &Bound<'_, PyString>) -> PyResult<Option<headers::Plog>> {
        let Ok(line) = line.to_str() else { return Ok(None) }; // a lone surrogate: Python's
        // with the GIL held, as `Facts.find`: a header takes a microsecond
        guarded("a plog header", || Ok(self.headers.read(line.as_bytes())))
    }
}

/// The neighbour families of `knowledge.families.NeighbourMatcher` (see `families.rs`).
#[pyclass(frozen, module = "ddtriage_core")]
struct Families {
    table: Arc<families::FamilyTable>,
}

#[pymethods]
impl Families {
    #[new]
    fn new(rows: Vec<families::Row>) -> PyResult<Self> {
        install_hook();
        guarded("the neighbour families", || {
            Ok(Families {
                table: Arc::new(families::FamilyTable::new(rows).map_err(PyValueError::new_err)?),
            })
        })
    }

    /// Bit k: family k has a literal in `raw`.
    fn present(&self, raw: &[u8]) -> PyResult<u128> {
        guarded("a line", || Ok(self.table.present(raw)))
    }

    /// [(family index, code text)] of a line, or None when Python must answer.
    fn find(&self, raw: &[u8]) -> PyResult<Option<Vec<(usize, String)>>> {
        guarded("a line", || Ok(self.table.find(raw)))
    }
}

/// The code forms of `detect.patterns.CodeMatcher` (see `codes.rs`), from the catalog's data and
/// the context patterns Python hands over.
#[pyclass(frozen, module = "ddtriage_core")]
struct Codes {
    codes: Arc<codes::Codes>,
}

#[pymethods]
impl Codes {
    #[new]
    #[pyo3(signature = (names, family, errno_pattern, errno_values, standalone, context, result_list))]
    fn new(
        names: Vec<(String, u32)>,
        family: (u32, u32),
        errno_pattern: Option<String>,
        errno_values: Vec<(String, u32)>,
        standalone: Vec<(String, u32)>,
        context: String,
        result_list: String,
    ) -> PyResult<Self> {
        install_hook();
        let spec = codes::Spec {
            names,
            family,
            errno_pattern,
            errno_values,
            standalone,
            context,
            result_list,
        };
        let codes = guarded("the code forms", || {
            codes::Codes::new(spec).map_err(PyValueError::new_err)
        })?;
        Ok(Codes { codes: Arc::new(codes) })
    }

    /// The hits on one line as (value, start, end, form index, in a result list), or None when
    /// the line is not printable ASCII (Python's then).
    fn find(&self, line: &Bound<'_, PyString>) -> PyResult<Option<Vec<codes::Hit>>> {
        let Ok(line) = line.to_str() else { return Ok(None) }; // a lone surrogate: Python's
        guarded("a line", || Ok(self.codes.find(line.as_bytes())))
    }
}

/// `Candidate.raw_before`'s start: up to `limit` lines back from `start`, not before `floor`.
#[pyfunction]
fn begin_back(buf: &[u8], start: usize, floor: usize, limit: usize) -> PyResult<usize> {
    guarded("a buffer", || Ok(lines::begin_back(buf, start, floor, limit)))
}

/// `Candidate.lookback`'s lines, oldest first: (line number, text) where the line is ASCII (its
/// bytes cut to `cut`, decoded as `decode` does), else (line number, (begin, end)) for Python to
/// decode; and whether any is the latter. `line_no`: the number of the line just before `start`.
#[pyfunction]
fn lines_back<'py>(
    py: Python<'py>,
    buf: &[u8],
    start: usize,
    floor: usize,
    limit: usize,
    cut: usize,
    line_no: i64,
) -> PyResult<(Bound<'py, PyList>, bool)> {
    guarded("a buffer", || {
        let spans = lines::spans_back(buf, start, floor, limit);
        let out = PyList::empty(py);
        let mut odd = false;
        for (k, &(b, e)) in spans.iter().enumerate().rev() {
            let n = line_no - k as i64;
            match lines::ascii_text(&buf[b..e], cut) {
                Some(text) => out.append((n, text))?,
                None => {
                    odd = true;
                    out.append((n, (b, e)))?
                }
            }
        }
        Ok((out, odd))
    })
}

/// Line ends of `data` counted (a helper for tests and the bench).
#[pyfunction]
fn count_lines(py: Python<'_>, data: &[u8]) -> usize {
    py.detach(|| count_nl(data))
}

/// Let glibc's malloc keep freed blocks for reuse: a scan allocates a block of megabytes (a read,
/// a decompressed piece, a buffer joined) many times a second. By default each such block above
/// the dynamic thresholds is a fresh mapping or trimmed heap, every page of it faulted in again
/// (a sixth of a sparse scan's time went to the kernel). Allocations up to `mmap` bytes then come
/// from the heap, and up to `trim` free bytes stay at its top. True when both were set
/// (glibc only; elsewhere, or when the allocator refuses, nothing changes).
#[pyfunction]
fn tune_allocator(mmap: usize, trim: usize) -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let (Ok(mmap), Ok(trim)) = (i32::try_from(mmap), i32::try_from(trim)) else {
            return false;
        };
        // SAFETY: mallopt only sets two of malloc's parameters; it is safe to call at any time.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, mmap) == 1 && libc::mallopt(libc::M_TRIM_THRESHOLD, trim) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = (mmap, trim);
        false
    }
}

/// The JSON lines of a batch of findings (`analyzer.core.serial.finding_lines`' twin): per finding
/// (a `Finding` tuple) its line, or None where Python must write it (a type the fast encoder does
/// not know exactly, text that is not valid Unicode, a rule missing from `texts`). `texts`: rule
/// id -> (remedy JSON, references JSON), as `serial._cached` encodes them. `shift`: added to each
/// finding's line, API line and causes' lines (`records.shifted`: a later byte range's findings as
/// the store holds them).
#[pyfunction]
#[pyo3(signature = (findings, texts, shift=0))]
fn finding_lines(findings: &Bound<'_, PyList>, texts: &Bound<'_, PyDict>, shift: i64) -> PyResult<Vec<Option<String>>> {
    guarded("finding_lines", || {
        let mut out = Vec::with_capacity(findings.len());
        for f in findings.iter() {
            out.push(finding_line(&f, texts, shift).ok().flatten());
        }
        Ok(out)
    })
}

/// A finding item as Python holds it.
struct Held<'py>(Bound<'py, PyAny>);

impl findingjson::Field for Held<'_> {
    fn text(&self) -> Option<Option<&str>> {
        if self.0.is_none() {
            return Some(None);
        }
        Some(Some(self.0.cast_exact::<PyString>().ok()?.to_str().ok()?))
    }
    fn int(&self) -> Option<Option<i64>> {
        if self.0.is_none() {
            return Some(None);
        }
        Some(Some(self.0.cast_exact::<PyInt>().ok()?.extract::<i64>().ok()?))
    }
    fn flag(&self) -> Option<Option<bool>> {
        if self.0.is_none() {
            return Some(None);
        }
        Some(Some(self.0.cast_exact::<PyBool>().ok()?.is_true()))
    }
    fn tuple(&self) -> Option<Vec<Self>> {
        Some(self.0.cast_exact::<PyTuple>().ok()?.iter().map(Held).collect())
    }
}

fn finding_line(f: &Bound<'_, PyAny>, texts: &Bound<'_, PyDict>, shift: i64) -> PyResult<Option<String>> {
    let items: Vec<Held<'_>> = f.cast::<PyTuple>()?.iter().map(Held).collect();
    Ok(findingjson::finding_line(&items, shift, |rule, o| {
        let found = texts.get_item(rule).ok()??;
        let pair = found.cast_exact::<PyTuple>().ok()?;
        let (remedy, references) = (pair.get_item(0).ok()?, pair.get_item(1).ok()?);
        let remedy = remedy.cast_exact::<PyString>().ok()?.to_str().ok()?;
        let references = references.cast_exact::<PyString>().ok()?.to_str().ok()?;
        findingjson::push_rule_texts(o, remedy, references);
        Some(())
    }))
}

/// The JSON lines of the store's spilled chunks (`findingjson::push_chunk_lines`), for the rules'
/// texts it is built with (rule id -> (remedy JSON, references JSON), as `serial._cached` encodes
/// them). `render` reads a chunk without the GIL, so threads render chunks side by side.
#[pyclass(frozen, module = "ddtriage_core")]
struct ChunkLines {
    rules: std::collections::HashMap<String, (String, String)>,
}

#[pymethods]
impl ChunkLines {
    #[new]
    fn new(rules: std::collections::HashMap<String, (String, String)>) -> Self {
        ChunkLines { rules }
    }

    /// The chunk's findings' JSON lines, their lines moved by `shift`, as a list of strings of up
    /// to `size` lines each joined by `sep`; None where Python must read the chunk. A piece at a
    /// time becomes a Python string, so a chunk's text is held once, not twice.
    #[pyo3(signature = (data, shift, sep, size))]
    fn render<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyBytes>,
        shift: i64,
        sep: &str,
        size: usize,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let data = data.as_bytes();
        guarded("a spilled chunk", || {
            let Some(parsed) = py.detach(|| marshal::parse(data)) else {
                return Ok(None);
            };
            let Some(findings) = findingjson::chunk_findings(&parsed) else {
                return Ok(None);
            };
            let pieces = PyList::empty(py);
            let mut out = String::new();
            for part in findings.chunks(size.max(1)) {
                out.clear();
                let rendered =
                    py.detach(|| findingjson::push_chunk_lines(&parsed, part, &self.rules, shift, sep, &mut out));
                if rendered.is_none() {
                    return Ok(None);
                }
                pieces.append(PyString::new(py, &out))?;
            }
            Ok(Some(pieces))
        })
    }
}

#[pymodule]
fn ddtriage_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    install_hook();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Matcher>()?;
    m.add_class::<Scan>()?;
    m.add_class::<Facts>()?;
    m.add_class::<Nearby>()?;
    m.add_class::<Codes>()?;
    m.add_class::<Families>()?;
    m.add_class::<PlogHeaders>()?;
    m.add_class::<native::Detector>()?;
    m.add_class::<native::Block>()?;
    m.add_class::<native::Stream>()?;
    m.add_class::<native::UnitTally>()?;
    m.add_class::<ChunkLines>()?;
    m.add_function(wrap_pyfunction!(count_lines, m)?)?;
    m.add_function(wrap_pyfunction!(begin_back, m)?)?;
    m.add_function(wrap_pyfunction!(lines_back, m)?)?;
    m.add_function(wrap_pyfunction!(tune_allocator, m)?)?;
    m.add_function(wrap_pyfunction!(finding_lines, m)?)?;
    Ok(())
}
