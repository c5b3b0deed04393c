//! The engine in the core as Python sees it (issue #17): `Detector` (the tables of one engine,
//! built once), `Block` (a block a `Scan` in native mode hands back whole) and `Stream` (one
//! plain stream's engine, `detect.rs`, with the Python callbacks it asks).
//!
//! What crosses per block: the `Block` object (the buffer, its candidates and their fact-table
//! answers, never a tuple per line), then back a list of `Finding`s. What crosses per rare event:
//! a rule not yet remembered, a possible proof of recovery, and a line the core does not read
//! (with the stream's state, both ways). At the stream's end: its node facts and related errors.

use foldhash::{HashMap, HashMapExt};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList, PyString, PyTuple};

use crate::apis::{ApiSpec, ApiTable};
use crate::detect::{
    self, Cand, FamilyInfo, FindingRec, Host, HostError, Item, Layout, ProofRec, RuleOut, State, StreamCfg, Tables,
};
use crate::fingerprint::{Masks, fingerprint};
use crate::headers::{Grammar, GrammarSpec, Header, YearHint};
use crate::tally::{self, Kept, View};
use crate::{Codes, Facts, Families, NodeFactsOut, guarded, install_hook, taken_facts};

type FamilyRow = (String, String, Vec<(String, String)>, Vec<(String, String)>);
type GrammarRow = (
    String,
    Vec<String>,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
);
type ApiRow = (
    Vec<(String, String)>,
    Vec<(String, String)>,
    Vec<String>,
    Vec<String>,
    String,
    String,
    String,
);
/// (node, kind, device, pid, anchored, pod, container) of `inputs.Layout`.
type LayoutRow = (
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    bool,
    Option<String>,
    Option<String>,
);
type YearRow = (Option<i64>, bool, Option<String>, Option<String>, bool);
type HeaderRow = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    usize,
    usize,
    bool,
    Option<String>,
);

fn year_of(row: Option<YearRow>) -> Option<YearHint> {
    row.map(|(year, guessed, written_by, near, fixed)| YearHint {
        year,
        guessed,
        written_by,
        near,
        fixed,
    })
}

fn header_row(h: &Header) -> HeaderRow {
    (
        h.fmt.map(str::to_string),
        h.timestamp.clone(),
        h.pid.clone(),
        h.tid.clone(),
        h.func.clone(),
        h.msg_start,
        h.start,
        h.yearless,
        h.pod.clone(),
    )
}

const FMTS: [&str; 6] = ["plog", "vllm", "glog", "torch_npu", "mindie", "pylog"];

fn header_of(row: HeaderRow) -> Header {
    let (fmt, timestamp, pid, tid, func, msg_start, start, yearless, pod) = row;
    Header {
        fmt: fmt.and_then(|f| FMTS.iter().copied().find(|k| *k == f)),
        timestamp,
        pid,
        tid,
        func,
        msg_start,
        start,
        yearless,
        pod,
    }
}

/// The tables of one engine, compiled once (`Engine` builds it under the core).
#[pyclass(frozen, module = "ddtriage_core")]
pub struct Detector {
    tables: Arc<Tables>,
}

#[pymethods]
impl Detector {
    #[new]
    #[pyo3(signature = (codes, families, family_info, facts, grammar, apis, link_kinds, version_kinds, uses_versions, masks))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        codes: &Codes,
        families: &Families,
        family_info: Vec<FamilyRow>,
        facts: &Facts,
        grammar: GrammarRow,
        apis: ApiRow,
        link_kinds: Vec<String>,
        version_kinds: Vec<String>,
        uses_versions: bool,
        masks: Vec<(String, String)>,
    ) -> PyResult<Self> {
        install_hook();
        guarded("the engine's tables", || {
            let err = PyValueError::new_err::<String>;
            if !families.table.all_portable() {
                return Err(err("a neighbour family's pattern is Python's".into()));
            }
            if !facts.table.not_portable.is_empty() {
                return Err(err("a link fact's pattern is Python's".into()));
            }
            let Some(proofs) = facts.proofs.clone() else {
                return Err(err("the fact table has no proofs of recovery".into()));
            };
            let (plog, tails, vllm, vllm_pid, vllm_relay, glog, torch, mindie, pylog) = grammar;
            let grammar = Grammar::new(&GrammarSpec {
                plog,
                tails,
                vllm,
                vllm_pid,
                vllm_relay,
                glog,
                torch,
                mindie,
                pylog,
            })
            .map_err(err)?;
            let (spellings, tags, shared, ordered, tag, frame, marker) = apis;
            let apis = ApiTable::new(ApiSpec {
                spellings,
                tags,
                shared,
                ordered,
                tag,
                frame,
                marker,
            })
            .map_err(err)?;
            let ids = &facts.table.ids;
            let family_info = family_info
                .into_iter()
                .map(|(id, name, aliases, meanings)| FamilyInfo {
                    id,
                    name,
                    aliases: aliases.into_iter().collect(),
                    meanings: meanings.into_iter().collect(),
                })
                .collect();
            Ok(Detector {
                tables: Arc::new(Tables {
                    codes: codes.codes.clone(),
                    families: families.table.clone(),
                    family_info,
                    facts: facts.table.clone(),
                    proofs,
                    grammar,
                    apis,
                    link_kind: ids.iter().map(|k| link_kinds.contains(k)).collect(),
                    version_kind: ids.iter().map(|k| version_kinds.contains(k)).collect(),
                    version_kinds,
                    uses_versions,
                    masks: Mutex::new(Masks::new(masks).map_err(err)?),
                    rules: Mutex::new(HashMap::new()),
                }),
            })
        })
    }

    /// `record_headers(line, year)` of a line of printable ASCII (the twin tests ask).
    #[pyo3(signature = (line, year = None))]
    fn records(&self, line: &str, year: Option<YearRow>) -> PyResult<Vec<HeaderRow>> {
        let year = year_of(year);
        guarded("a line", || {
            Ok(self
                .tables
                .grammar
                .records(line, year.as_ref())
                .iter()
                .map(header_row)
                .collect())
        })
    }

    /// `message_template(text)` (the twin tests ask).
    fn template(&self, text: &str) -> PyResult<String> {
        guarded("a line", || {
            Ok(self.tables.masks.lock().map(|m| m.mask(text)).unwrap_or_default())
        })
    }

    /// `fingerprint(code, api, rule, template)` (the twin tests ask).
    #[staticmethod]
    #[pyo3(signature = (code, api, rule, template))]
    fn fingerprint(code: &str, api: Option<&str>, rule: &str, template: &str) -> String {
        fingerprint(code, api, rule, template)
    }

    /// `ApiResolver.on_line(line, parse_header(line), offset)`: (api, evidence) or None (the twin
    /// tests ask).
    #[pyo3(signature = (line, offset = None))]
    fn on_line(&self, line: &str, offset: Option<usize>) -> PyResult<Option<(String, &'static str)>> {
        guarded("a line", || {
            let header = self.tables.grammar.parse(line, None);
            Ok(self.tables.apis.on_line(line, &header, offset))
        })
    }
}

/// A block as a `Scan` in native mode hands it over: its buffer, candidate lines and what the
/// fact table made of each.
#[pyclass(frozen, module = "ddtriage_core")]
pub struct Block {
    buf: Py<PyBytes>,
    first_line_no: i64,
    cands: Vec<Cand>,
    tiers: Vec<detect::Tier>,
}

impl Block {
    pub fn new(buf: Py<PyBytes>, first_line_no: i64, cands: Vec<Cand>, tiers: Vec<detect::Tier>) -> Block {
        Block {
            buf,
            first_line_no,
            cands,
            tiers,
        }
    }
}

/// (rule, find_proof, note_proof, decline, python_state): see `Callbacks`.
type CallbackRow = (Py<PyAny>, Py<PyAny>, Py<PyAny>, Py<PyAny>, Py<PyAny>);

/// The Python callables a stream asks.
struct Callbacks {
    rule: Py<PyAny>, // (value, api, in_cluster, nearby, versions) -> (rule, action, recoverable, name, known, generic, asked)
    find_proof: Py<PyAny>, // (text) -> proof id or None
    note_proof: Py<PyAny>, // (line, timestamp, node, proof, pid, clusters, addrs, text, year_guessed)
    decline: Py<PyAny>, // (state or None, (number, offset, start, raw, tier), buf, first_line_no) -> findings
    python_state: Py<PyAny>, // () -> Python's state (`_StreamState.to_core`)
    make: Py<PyAny>, // tuple.__new__
    finding: Py<PyAny>, // records.Finding
    zone: Option<Py<PyAny>>, // --tz: (stamp) -> `StreamClock._zoned` of it; None: stamps as printed
}

/// Stamps `Callbacks::zone` answered (a storm repeats its seconds; a stamp's answer never changes).
const ZONED_MEMORY: usize = 4096;

/// The fields every finding of a stream shares, as Python objects once.
struct Shared {
    source: Py<PyAny>,
    node: Py<PyAny>,
    kind: Py<PyAny>,
    device: Py<PyAny>,
    bundle: Py<PyAny>,
    pod: Py<PyAny>,
    container: Py<PyAny>,
}

/// One plain stream's engine in the core.
#[pyclass(unsendable, module = "ddtriage_core")]
pub struct Stream {
    tables: Arc<Tables>,
    cfg: StreamCfg,
    state: State,
    calls: Callbacks,
    shared: Shared,
    rules: HashMap<String, Py<PyAny>>, // rule id -> its text, once
    // The texts a storm's findings repeat (code, name, API, pid, tid, fingerprint), one Python
    // string each: fewer objects to build, and the store's marshal writes a repeat as a reference.
    texts: HashMap<String, Py<PyString>>,
    node: Option<String>,
    tally: Option<tally::Tally<Obj>>, // the stream's findings counted here (`Tally.from_core`)
    fresh: Fresh,
    zoned: HashMap<String, String>, // stamp -> `Callbacks::zone`'s answer, at most ZONED_MEMORY
}

/// A finding as the tally keeps it: the Python `Finding` itself.
type Obj = Arc<Py<PyAny>>;

/// A finding Python read (a declined line's), its fields owned, for the tally.
struct Owned {
    s: [Option<String>; 33],
    line: i64,
    recoverable: Option<bool>,
    flags: [bool; 3], // year_guessed, generic, in_cluster_results (unused)
    link: Vec<(String, String)>,
}

impl Owned {
    fn of(f: &Bound<'_, PyAny>) -> PyResult<Owned> {
        let t = f.cast::<PyTuple>()?;
        let mut s: [Option<String>; 33] = std::array::from_fn(|_| None);
        for i in [0, 2, 3, 4, 5, 9, 10, 13, 14, 18, 19, 23, 24, 25, 26, 27] {
            s[i] = t.get_item(i)?.extract()?;
        }
        Ok(Owned {
            s,
            line: t.get_item(1)?.extract()?,
            recoverable: t.get_item(8)?.extract()?,
            flags: [t.get_item(21)?.extract()?, t.get_item(17)?.extract()?, false],
            link: t.get_item(32)?.extract()?,
        })
    }

    fn view(&self) -> View<'_> {
        let s = |i: usize| self.s[i].as_deref();
        View {
            source: s(0).unwrap_or(""),
            line: self.line,
            code: s(3).unwrap_or(""),
            name: s(4),
            api: s(5),
            rule: s(9).unwrap_or(""),
            action: s(10).unwrap_or(""),
            recoverable: self.recoverable,
            timestamp: s(2),
            time_hint: s(23),
            year_guessed: self.flags[0],
            node: s(18),
            kind: s(19).unwrap_or(""),
            pid: s(13),
            tid: s(14),
            pod: s(26),
            container: s(27),
            fingerprint: s(24).unwrap_or(""),
            bundle: s(25),
            generic: self.flags[1],
            link: &self.link,
        }
    }
}

/// The tally's view of a finding the core built.
fn view_of<'a>(f: &'a FindingRec, cfg: &'a StreamCfg, node: &'a Option<String>) -> View<'a> {
    let r = &f.rule;
    View {
        source: &cfg.name,
        line: f.line,
        code: &f.code,
        name: r.name.as_deref(),
        api: f.api.as_deref(),
        rule: &r.rule,
        action: &r.action,
        recoverable: r.recoverable,
        timestamp: f.timestamp.as_deref(),
        time_hint: f.time_hint.as_deref(),
        year_guessed: f.year_guessed,
        node: node.as_deref(),
        kind: &cfg.layout.kind,
        pid: f.pid.as_deref(),
        tid: f.tid.as_deref(),
        pod: cfg.layout.pod.as_deref(),
        container: cfg.layout.container.as_deref(),
        fingerprint: &f.fingerprint,
        bundle: cfg.bundle.as_deref(),
        generic: r.generic,
        link: &f.link,
    }
}

fn opt<'py>(py: Python<'py>, s: &Option<String>) -> Bound<'py, PyAny> {
    match s {
        Some(s) => PyString::new(py, s).into_any(),
        None => py.None().into_bound(py),
    }
}

/// `s` as a Python string, the same object for the same text while fewer than 4,096 are kept.
fn shared_text<'py>(texts: &mut HashMap<String, Py<PyString>>, py: Python<'py>, s: &str) -> Bound<'py, PyAny> {
    if let Some(t) = texts.get(s) {
        return t.bind(py).clone().into_any();
    }
    if texts.len() >= 4096 {
        texts.clear(); // a stream of ever-new texts: no more than a bounded table
    }
    let t = PyString::new(py, s);
    texts.insert(s.to_string(), t.clone().unbind());
    t.into_any()
}

fn shared_opt<'py>(
    texts: &mut HashMap<String, Py<PyString>>,
    py: Python<'py>,
    s: &Option<String>,
) -> Bound<'py, PyAny> {
    match s {
        Some(s) => shared_text(texts, py, s),
        None => py.None().into_bound(py),
    }
}

fn opt_static<'py>(py: Python<'py>, s: Option<&'static str>) -> Bound<'py, PyAny> {
    match s {
        Some(s) => PyString::intern(py, s).into_any(),
        None => py.None().into_bound(py),
    }
}

/// The state of a stream as Python's `_StreamState.from_core` reads it.
type StateRow = (
    Vec<(i64, i64, HeaderRow)>,
    Vec<(Option<String>, i64, i64)>,
    Option<(Option<i64>, i64)>,
    Vec<(Option<String>, Vec<(String, String, i64)>)>,
    i64,
    i64,
    i64,
    Vec<u32>,
);

fn export(tables: &Tables, state: &State) -> StateRow {
    let ids = &tables.facts.ids;
    (
        state.generic.iter().map(|(l, o, h)| (*l, *o, header_row(h))).collect(),
        state.last_seen.iter().map(|(p, (l, e))| (p.clone(), *l, *e)).collect(),
        state.roll.as_ref().map(|r| (r.month, r.years)),
        state
            .recent
            .iter()
            .map(|(p, kinds)| {
                (
                    p.clone(),
                    kinds.iter().map(|(k, v, l)| (ids[*k].clone(), v.clone(), *l)).collect(),
                )
            })
            .collect(),
        state.related_noted,
        state.related_line,
        state.line_no,
        state.reported.clone(),
    )
}

fn import(tables: &Tables, state: &mut State, row: StateRow) -> PyResult<()> {
    let (generic, last_seen, roll, recent, related_noted, related_line, line_no, reported) = row;
    state.generic = generic.into_iter().map(|(l, o, h)| (l, o, header_of(h))).collect();
    state.last_seen = last_seen.into_iter().map(|(p, l, e)| (p, (l, e))).collect();
    state.roll = roll.map(|(month, years)| detect::Roll { month, years });
    let ids = &tables.facts.ids;
    let mut mine = HashMap::new();
    for (p, kinds) in recent {
        let mut out = Vec::with_capacity(kinds.len());
        for (kind, value, line) in kinds {
            let Some(k) = ids.iter().position(|id| *id == kind) else {
                return Err(PyValueError::new_err(format!("a link fact of unknown kind {kind:?}")));
            };
            out.push((k, value, line));
        }
        mine.insert(p, out);
    }
    state.recent = mine;
    state.related_noted = related_noted;
    state.related_line = related_line;
    state.line_no = line_no;
    state.reported = reported;
    Ok(())
}

/// The host the engine asks: the stream's callbacks, with the GIL.
struct PyHost<'a, 'py> {
    py: Python<'py>,
    calls: &'a Callbacks,
    tables: &'a Tables,
    blk: &'a Block,
    fresh: &'a mut Fresh,
    zoned: &'a mut HashMap<String, String>,
    err: Option<PyErr>,
}

/// Whose copy of a stream's state is the newer: the core's, Python's, or neither (both equal).
#[derive(Default)]
struct Fresh {
    python_older: bool,
    core_older: bool,
}

impl PyHost<'_, '_> {
    fn fail<T>(&mut self, e: PyErr) -> Result<T, HostError> {
        self.err = Some(e);
        Err(HostError)
    }
}

impl<'py> Host for PyHost<'_, 'py> {
    type Declined = Bound<'py, PyAny>;

    fn rule(
        &mut self,
        value: u32,
        api: Option<&str>,
        in_cluster: bool,
        nearby: &str,
        versions: &[(String, String)],
    ) -> Result<(RuleOut, bool), HostError> {
        let got = self
            .calls
            .rule
            .bind(self.py)
            .call1((value, api, in_cluster, nearby, versions.to_vec()))
            .and_then(|r| r.extract::<(String, String, Option<bool>, Option<String>, bool, bool, bool)>());
        match got {
            Ok((rule, action, recoverable, name, known, generic, asked)) => Ok((
                RuleOut {
                    rule,
                    action,
                    recoverable,
                    name,
                    known,
                    generic,
                },
                asked,
            )),
            Err(e) => self.fail(e),
        }
    }

    fn find_proof(&mut self, text: &str) -> Result<Option<String>, HostError> {
        match self
            .calls
            .find_proof
            .bind(self.py)
            .call1((text,))
            .and_then(|r| r.extract())
        {
            Ok(p) => Ok(p),
            Err(e) => self.fail(e),
        }
    }

    fn note_proof(&mut self, p: ProofRec) -> Result<(), HostError> {
        let args = (
            p.line,
            p.timestamp,
            p.node,
            p.proof,
            p.pid,
            PyTuple::new(self.py, p.clusters).ok(),
            PyTuple::new(self.py, p.addrs).ok(),
            p.text,
            p.year_guessed,
        );
        match self.calls.note_proof.bind(self.py).call1(args) {
            Ok(_) => Ok(()),
            Err(e) => self.fail(e),
        }
    }

    fn decline(&mut self, state: &mut State, i: usize) -> Result<Self::Declined, HostError> {
        let py = self.py;
        let (n, off, start, stop, facts_only) = self.blk.cands[i];
        let buf = self.blk.buf.bind(py);
        let raw = PyBytes::new(py, &buf.as_bytes()[start..stop]);
        let ids = &self.tables.facts.ids;
        let tier: Bound<'py, PyAny> = match self.blk.tiers.get(i) {
            Some(detect::Tier::Facts(found)) if facts_only => {
                let list = PyList::empty(py);
                for (k, v) in found {
                    if let Err(e) = list.append((PyString::intern(py, &ids[*k]), v)) {
                        return self.fail(e);
                    }
                }
                list.into_any()
            }
            // a row crosses as `LineObserver.fact_rows` takes it: (pid, ((kind, value, line), ...))
            Some(detect::Tier::Row(pid, found)) => {
                let updates: Vec<(Bound<'py, PyString>, &String, i64)> = found
                    .iter()
                    .map(|(k, v)| (PyString::intern(py, &ids[*k]), v, n))
                    .collect();
                match (String::from_utf8_lossy(pid), updates).into_pyobject(py) {
                    Ok(row) => row.into_any(),
                    Err(e) => return self.fail(e),
                }
            }
            _ => PyBool::new(py, facts_only).to_owned().into_any(),
        };
        let row = if self.fresh.python_older {
            Some(export(self.tables, state))
        } else {
            None
        };
        self.fresh.python_older = false;
        let got = self
            .calls
            .decline
            .bind(py)
            .call1((row, (n, off, start, raw, tier), buf, self.blk.first_line_no));
        match got {
            Ok(found) => {
                self.fresh.core_older = true;
                Ok(found)
            }
            Err(e) => self.fail(e),
        }
    }

    fn sync(&mut self, state: &mut State) -> Result<(), HostError> {
        if !self.fresh.core_older {
            return Ok(());
        }
        let got = self
            .calls
            .python_state
            .bind(self.py)
            .call0()
            .and_then(|r| r.extract::<StateRow>())
            .and_then(|row| import(self.tables, state, row));
        match got {
            Ok(()) => {
                self.fresh.core_older = false;
                Ok(())
            }
            Err(e) => self.fail(e),
        }
    }

    fn touched(&mut self) {
        self.fresh.python_older = true;
    }

    fn python_owns(&self) -> bool {
        self.fresh.core_older
    }

    fn zoned(&mut self, stamp: String) -> Result<String, HostError> {
        let Some(zone) = &self.calls.zone else {
            return Ok(stamp);
        };
        if let Some(known) = self.zoned.get(&stamp) {
            return Ok(known.clone());
        }
        match zone
            .bind(self.py)
            .call1((stamp.as_str(),))
            .and_then(|r| r.extract::<String>())
        {
            Ok(utc) => {
                if self.zoned.len() >= ZONED_MEMORY {
                    self.zoned.clear();
                }
                self.zoned.insert(stamp, utc.clone());
                Ok(utc)
            }
            Err(e) => self.fail(e),
        }
    }
}

impl Stream {
    fn finding<'py>(&mut self, py: Python<'py>, f: &FindingRec) -> PyResult<Bound<'py, PyAny>> {
        let s = &self.shared;
        let rule = match self.rules.get(&f.rule.rule) {
            Some(r) => r.clone_ref(py),
            None => {
                let r = PyString::new(py, &f.rule.rule).into_any().unbind();
                self.rules.insert(f.rule.rule.clone(), r.clone_ref(py));
                r
            }
        };
        let causes = PyTuple::new(
            py,
            f.causes
                .iter()
                .map(|(n, family, code, meaning)| (*n, family, code, meaning).into_pyobject(py))
                .collect::<PyResult<Vec<_>>>()?,
        )?;
        let link = PyTuple::new(
            py,
            f.link
                .iter()
                .map(|(k, v)| (PyString::intern(py, k), v).into_pyobject(py))
                .collect::<PyResult<Vec<_>>>()?,
        )?;
        let r = &f.rule;
        let none = || py.None().into_bound(py);
        let items: [Bound<'py, PyAny>; 33] = [
            s.source.bind(py).clone(),
            f.line.into_pyobject(py)?.into_any(),
            opt(py, &f.timestamp),
            shared_text(&mut self.texts, py, &f.code),
            shared_opt(&mut self.texts, py, &r.name),
            shared_opt(&mut self.texts, py, &f.api),
            opt_static(py, f.api_evidence),
            match f.api_line {
                Some(n) => n.into_pyobject(py)?.into_any(),
                None => none(),
            },
            match r.recoverable {
                Some(b) => PyBool::new(py, b).to_owned().into_any(),
                None => none(),
            },
            rule.into_bound(py),
            PyString::intern(py, &r.action).into_any(),
            PyString::new(py, &f.text).into_any(),
            PyString::intern(py, f.form).into_any(),
            shared_opt(&mut self.texts, py, &f.pid),
            shared_opt(&mut self.texts, py, &f.tid),
            PyBool::new(py, f.in_cluster_results).to_owned().into_any(),
            PyBool::new(py, r.known).to_owned().into_any(),
            PyBool::new(py, r.generic).to_owned().into_any(),
            s.node.bind(py).clone(),
            s.kind.bind(py).clone(),
            s.device.bind(py).clone(),
            PyBool::new(py, f.year_guessed).to_owned().into_any(),
            causes.into_any(),
            opt(py, &f.time_hint),
            shared_text(&mut self.texts, py, &f.fingerprint),
            s.bundle.bind(py).clone(),
            s.pod.bind(py).clone(),
            s.container.bind(py).clone(),
            none(),
            none(),
            none(),
            opt_static(py, f.time_source),
            link.into_any(),
        ];
        let tuple = PyTuple::new(py, items)?;
        self.calls.make.bind(py).call1((self.calls.finding.bind(py), tuple))
    }
}

#[pymethods]
impl Stream {
    #[new]
    #[pyo3(signature = (detector, name, layout, bundle, default_node, year, year_guessed, max_related, callbacks, finding,
                        tally = None, cap = 10_000, zone = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        detector: &Detector,
        name: String,
        layout: LayoutRow,
        bundle: Option<String>,
        default_node: Option<String>,
        year: Option<YearRow>,
        year_guessed: bool,
        max_related: i64,
        callbacks: CallbackRow,
        finding: Py<PyAny>,
        tally: Option<bool>,
        cap: usize,
        zone: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let (node, kind, device, pid, anchored, pod, container) = layout;
        let cfg = StreamCfg {
            name,
            layout: Layout {
                node,
                kind,
                device,
                pid,
                anchored,
                pod,
                container,
            },
            bundle,
            default_node,
            year: year_of(year),
            year_guessed,
            max_related,
        };
        let tables = detector.tables.clone();
        let state = State::new(&tables, &cfg);
        let cfg_node = cfg.node();
        let (rule, find_proof, note_proof, decline, python_state) = callbacks;
        let make = py.get_type::<PyTuple>().getattr("__new__")?.unbind();
        let shared = Shared {
            source: PyString::new(py, &cfg.name).into_any().unbind(),
            node: opt(py, &cfg.node()).unbind(),
            kind: PyString::new(py, &cfg.layout.kind).into_any().unbind(),
            device: opt(py, &cfg.layout.device).unbind(),
            bundle: opt(py, &cfg.bundle).unbind(),
            pod: opt(py, &cfg.layout.pod).unbind(),
            container: opt(py, &cfg.layout.container).unbind(),
        };
        Ok(Stream {
            tables,
            cfg,
            state,
            calls: Callbacks {
                rule,
                find_proof,
                note_proof,
                decline,
                python_state,
                make,
                finding,
                zone,
            },
            shared,
            rules: HashMap::new(),
            texts: HashMap::new(),
            node: cfg_node,
            tally: tally.map(|range_part| tally::Tally::new(range_part, cap)),
            fresh: Fresh::default(),
            zoned: HashMap::new(),
        })
    }

    /// The findings of a block, in order (lines the core does not read are Python's, through
    /// the `decline` callback, with this stream's state).
    fn block<'py>(&mut self, py: Python<'py>, block: &Block) -> PyResult<Bound<'py, PyList>> {
        let name = self.cfg.name.clone();
        let items = guarded(&name, || {
            let engine = detect::Engine::new(&self.tables, &self.cfg);
            let mut host = PyHost {
                py,
                calls: &self.calls,
                tables: &self.tables,
                blk: block,
                fresh: &mut self.fresh,
                zoned: &mut self.zoned,
                err: None,
            };
            let view = detect::BlockView {
                buf: block.buf.bind(py).as_bytes(),
                first_line_no: block.first_line_no,
            };
            match engine.block(&mut self.state, &mut host, &view, &block.cands, &block.tiers) {
                Ok(items) => Ok(items),
                Err(HostError) => Err(host
                    .err
                    .take()
                    .unwrap_or_else(|| PyValueError::new_err("the engine stopped"))),
            }
        })?;
        let out = PyList::empty(py);
        for item in items {
            match item {
                Item::Found(f) => {
                    let obj = self.finding(py, &f)?;
                    if let Some(t) = self.tally.as_mut() {
                        t.add(&view_of(&f, &self.cfg, &self.node), &Arc::new(obj.clone().unbind()));
                    }
                    out.append(obj)?;
                }
                Item::Python(found) => {
                    for f in found.try_iter()? {
                        let f = f?;
                        if let Some(t) = self.tally.as_mut() {
                            t.add(&Owned::of(&f)?.view(), &Arc::new(f.clone().unbind()));
                        }
                        out.append(f)?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// The stream's tally (None without one, or when not `wanted`: it is dropped): its bursts
    /// closed first where it counts a whole source; as `diagnose.tally.Tally.from_core` reads it.
    /// The next call has none.
    #[pyo3(signature = (wanted = true))]
    fn tally<'py>(&mut self, py: Python<'py>, wanted: bool) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let Some(mut t) = self.tally.take().filter(|_| wanted) else {
            return Ok(None);
        };
        if !t.bursts.range_part {
            t.close();
        }
        export_tally(py, t).map(Some)
    }

    /// A whole source's tally, its bursts closed, merged into its unit's (`UnitTally`) instead of
    /// crossing to Python; False (nothing done) without a tally or for a byte range's.
    fn tally_into(&mut self, unit: &Bound<'_, UnitTally>) -> bool {
        match self.tally.take() {
            Some(mut t) if !t.bursts.range_part => {
                t.close();
                unit.borrow_mut().unit.absorb(t);
                true
            }
            other => {
                self.tally = other;
                false
            }
        }
    }

    /// The stream's state as `_StreamState.from_core` reads it.
    fn state(&self) -> StateRow {
        export(&self.tables, &self.state)
    }

    /// Take the state Python leaves (`_StreamState.to_core`): before the first block, a byte
    /// range's state after its history.
    fn set_state(&mut self, row: StateRow) -> PyResult<()> {
        import(&self.tables, &mut self.state, row)?;
        self.fresh = Fresh::default();
        Ok(())
    }

    /// What the stream gathered for its unit: (node facts as `NodeFacts.from_core` reads them,
    /// or None; the related errors noted, as (line, timestamp, family, code, meaning, pid, text,
    /// link, year_guessed); those only counted). Each call starts afresh.
    #[allow(clippy::type_complexity)]
    fn finish(
        &mut self,
    ) -> (
        Option<NodeFactsOut>,
        Vec<(
            i64,
            Option<String>,
            String,
            String,
            String,
            Option<String>,
            String,
            Vec<(String, String)>,
            bool,
        )>,
        u64,
    ) {
        let facts = taken_facts(&mut self.state.agg);
        let related = std::mem::take(&mut self.state.related)
            .into_iter()
            .map(|r| {
                (
                    r.line,
                    r.timestamp,
                    r.family,
                    r.code,
                    r.meaning,
                    r.pid,
                    r.text,
                    r.link,
                    r.year_guessed,
                )
            })
            .collect();
        (facts, related, std::mem::take(&mut self.state.related_dropped))
    }
}

/// The tally of a work unit's whole sources that the core read (`tally::Unit`): each stream's
/// merged in as it ends (`Stream.tally_into`), the whole read by Python once
/// (`diagnose.tally.Tally.from_core_unit`).
#[pyclass(module = "ddtriage_core")]
#[derive(Default)]
pub struct UnitTally {
    unit: tally::Unit<Obj>,
}

#[pymethods]
impl UnitTally {
    /// Rows kept for at most `cap` fingerprints (`summary.FINGERPRINT_CAP`).
    #[new]
    #[pyo3(signature = (cap = 10_000))]
    fn new(cap: usize) -> Self {
        UnitTally {
            unit: tally::Unit::new(cap),
        }
    }

    /// The tally so far, as `Tally.from_core_unit` reads it, without the kept bursts from `bound`
    /// on (`run.parallel.BurstCut`: they cannot make the cut); this one starts afresh.
    #[pyo3(signature = (bound = None))]
    fn export<'py>(&mut self, py: Python<'py>, bound: Option<tally::BurstKey>) -> PyResult<Bound<'py, PyTuple>> {
        let cap = self.unit.cap;
        let mut unit = std::mem::replace(&mut self.unit, tally::Unit::new(cap));
        unit.cap_rows();
        if let Some(bound) = bound {
            unit.bursts.retain(|(key, _)| *key < bound);
        }
        unit.trim();
        export_unit(py, unit)
    }
}

// ---------------------------------------------------------------------------------------------
// The tally as `Tally.from_core` reads it.

fn obj<'py>(py: Python<'py>, o: &Obj) -> Bound<'py, PyAny> {
    o.as_ref().clone_ref(py).into_bound(py)
}

fn key_py<'py>(py: Python<'py>, k: &tally::Key) -> PyResult<Bound<'py, PyTuple>> {
    (k.0.as_str(), k.1, k.2.as_str()).into_pyobject(py)
}

fn burst_key_py<'py>(py: Python<'py>, k: &tally::BurstKey) -> PyResult<Bound<'py, PyTuple>> {
    (k.0, k.1, k.2.as_str(), k.3.as_str(), k.4, key_py(py, &k.5)?, k.6).into_pyobject(py)
}

fn thread_py<'py>(py: Python<'py>, t: &tally::Thread) -> PyResult<Bound<'py, PyTuple>> {
    (t.0.as_str(), t.1.as_deref(), t.2.as_deref()).into_pyobject(py)
}

/// A kept finding's own `Finding` (`records.Finding`: a tuple of its fields): a burst's texts
/// are read from it, the finding's own Python strings, shared as the Python tally's bursts
/// share them (a unit's tally pickled back from a worker writes each once).
fn finding_of<'py>(py: Python<'py>, k: &Kept<Obj>) -> PyResult<Bound<'py, PyTuple>> {
    obj(py, &k.obj)
        .cast_into::<PyTuple>()
        .ok()
        .filter(|t| t.len() > FINDING_TIME_HINT)
        .ok_or_else(|| PyValueError::new_err("a tallied finding is not a Finding"))
}

// `records.Finding`'s fields a burst names, by position.
const FINDING_SOURCE: usize = 0;
const FINDING_LINE: usize = 1;
const FINDING_TIMESTAMP: usize = 2;
const FINDING_CODE: usize = 3;
const FINDING_NAME: usize = 4;
const FINDING_API: usize = 5;
const FINDING_EVIDENCE: usize = 6;
const FINDING_RECOVERABLE: usize = 8;
const FINDING_RULE: usize = 9;
const FINDING_ACTION: usize = 10;
const FINDING_TEXT: usize = 11;
const FINDING_PID: usize = 13;
const FINDING_NODE: usize = 18;
const FINDING_KIND: usize = 19;
const FINDING_CAUSES: usize = 22;
const FINDING_TIME_HINT: usize = 23;

fn fields_of<'py>(t: &Bound<'py, PyTuple>, at: &[usize]) -> PyResult<Vec<Bound<'py, PyAny>>> {
    at.iter().map(|&i| t.get_item(i)).collect()
}

/// (line, timestamp, inferred time, code, name, api, evidence, recoverable, rule, action, text).
fn lead_py<'py>(py: Python<'py>, k: &Kept<Obj>) -> PyResult<Bound<'py, PyTuple>> {
    let at = [
        FINDING_LINE,
        FINDING_TIMESTAMP,
        FINDING_TIME_HINT,
        FINDING_CODE,
        FINDING_NAME,
        FINDING_API,
        FINDING_EVIDENCE,
        FINDING_RECOVERABLE,
        FINDING_RULE,
        FINDING_ACTION,
        FINDING_TEXT,
    ];
    PyTuple::new(py, fields_of(&finding_of(py, k)?, &at)?)
}

fn links_py<'py>(t: &mut Texts<'py>, l: &tally::Links) -> PyResult<Bound<'py, PyTuple>> {
    let py = t.py;
    let peers = PyList::empty(py);
    for (a, b) in &l.peers {
        peers.append((t.o(a.as_deref()), t.o(b.as_deref())))?;
    }
    let by_code = PyList::empty(py);
    for ((name, api), n) in &l.by_code {
        by_code.append(((t.s(name), t.o(api.as_deref())), *n))?;
    }
    PyTuple::new(
        py,
        [
            t.list(&l.prints)?.into_any(),
            t.list(&l.req_ids)?.into_any(),
            peers.into_any(),
            by_code.into_any(),
        ],
    )
}

/// The fields of a `Burst`: (source, node, kind, pid, first line, last line, first seen, last
/// seen, findings, severe, lead, echoes, causes, also, links, repeats).
fn burst_py<'py>(t: &mut Texts<'py>, b: &tally::Burst<Obj>) -> PyResult<Bound<'py, PyTuple>> {
    let py = t.py;
    let also = PyList::empty(py);
    for a in &b.also {
        let f = finding_of(py, a)?;
        let at = [
            FINDING_CODE,
            FINDING_NAME,
            FINDING_API,
            FINDING_LINE,
            FINDING_ACTION,
            FINDING_RECOVERABLE,
        ];
        also.append(PyTuple::new(py, fields_of(&f, &at)?)?)?;
    }
    let lead = finding_of(py, &b.lead)?;
    // `Burst.causes`: the lead's first five
    let causes = lead
        .get_item(FINDING_CAUSES)?
        .cast_into::<PyTuple>()?
        .get_slice(0, 5)
        .into_any();
    let mut items = fields_of(&lead, &[FINDING_SOURCE, FINDING_NODE, FINDING_KIND, FINDING_PID])?;
    items.extend([
        b.first_line.into_pyobject(py)?.into_any(),
        b.last_line.into_pyobject(py)?.into_any(),
        t.o(b.first_seen.as_deref()),
        t.o(b.last_seen.as_deref()),
        b.findings.into_pyobject(py)?.into_any(),
        PyBool::new(py, b.severe).to_owned().into_any(),
        lead_py(py, &b.lead)?.into_any(),
        b.echoes.into_pyobject(py)?.into_any(),
        causes,
        also.into_any(),
        links_py(t, &b.links)?.into_any(),
        b.repeats.into_pyobject(py)?.into_any(),
    ]);
    PyTuple::new(py, items)
}

fn open_py<'py>(t: &mut Texts<'py>, b: &tally::OpenBurst<Obj>) -> PyResult<Bound<'py, PyTuple>> {
    let py = t.py;
    let others = PyList::empty(py);
    for ((code, api, action), k) in &b.others {
        others.append(((code.as_str(), api.as_str(), action.as_str()), obj(py, &k.obj)))?;
    }
    let items: Vec<Bound<'py, PyAny>> = vec![
        obj(py, &b.first.obj),
        b.last_line.into_pyobject(py)?.into_any(),
        b.last_code.as_str().into_pyobject(py)?.into_any(),
        b.last_seconds.into_pyobject(py)?.into_any(),
        obj(py, &b.lead.obj),
        b.count.into_pyobject(py)?.into_any(),
        b.echoes.into_pyobject(py)?.into_any(),
        b.repeats.into_pyobject(py)?.into_any(),
        others.into_any(),
        b.min_stamp.as_deref().into_pyobject(py)?.into_any(),
        b.max_stamp.as_deref().into_pyobject(py)?.into_any(),
        PyBool::new(py, b.severe_specific).to_owned().into_any(),
        PyBool::new(py, b.severe_any).to_owned().into_any(),
        PyBool::new(py, b.lead_is_specific).to_owned().into_any(),
        links_py(t, &b.links)?.into_any(),
    ];
    PyTuple::new(py, items)
}

/// (source, count, unrecoverable, unknown, whole, (line, code) last counted, guessed, codes,
/// actions, nodes, folds, bundles, prints, sure, bursts, largest): see `Tally.from_core`.
fn export_tally<'py>(py: Python<'py>, mut t: tally::Tally<Obj>) -> PyResult<Bound<'py, PyTuple>> {
    t.cap_rows();
    let mut texts = Texts {
        py,
        seen: HashMap::new(),
    };
    let codes = PyList::empty(py);
    for ((code, name, api, rule), a) in &t.codes {
        codes.append((
            (code.as_str(), name.as_str(), api.as_str(), rule.as_str()),
            (
                key_py(py, &a.first)?,
                a.action.as_str(),
                a.recoverable,
                a.count,
                a.first_seen.as_deref(),
                a.last_seen.as_deref(),
            ),
        ))?;
    }
    let nodes = PyList::empty(py);
    for (name, n) in &t.nodes {
        nodes.append((name.as_str(), n.findings, n.unrecoverable, n.kinds.clone()))?;
    }
    let folds = PyList::empty(py);
    for ((print, node), f) in &t.folds {
        folds.append((
            (print.as_str(), node.as_deref()),
            obj(py, &f.first),
            obj(py, &f.last),
            f.count,
            f.first_seen.as_deref(),
            f.last_seen.as_deref(),
        ))?;
    }
    let bundles = PyList::empty(py);
    for (key, b) in &t.bundles {
        bundles.append((
            key.as_deref(),
            b.findings,
            b.unrecoverable,
            b.first.as_deref(),
            b.last.as_deref(),
            b.nodes.clone(),
            (!b.more_prints).then(|| b.prints.clone()),
        ))?;
    }
    let prints = PyList::empty(py);
    for (key, p) in &t.prints {
        prints.append((
            key.as_str(),
            obj(py, &p.example),
            p.findings,
            p.first.as_deref(),
            p.last.as_deref(),
            p.bundles.clone(),
            p.nodes.clone(),
        ))?;
    }
    let sure = PyList::empty(py);
    for (node, (key, stamp)) in &t.sure {
        sure.append((node.as_deref(), (key_py(py, key)?, stamp.as_str())))?;
    }
    let b = &t.bursts;
    let kept = PyList::empty(py);
    for (key, burst) in &b.bursts {
        kept.append((burst_key_py(py, key)?, burst_py(&mut texts, burst)?))?;
    }
    let groups = PyList::empty(py);
    for (_, g) in b.groups.iter() {
        groups.append((
            burst_key_py(py, &g.key)?,
            burst_py(&mut texts, &g.first)?,
            g.bursts,
            g.findings,
            g.first_seen.as_deref(),
            g.last_seen.as_deref(),
        ))?;
    }
    let starts = PyList::empty(py);
    for (thread, (key, n)) in b.thread_start.iter() {
        starts.append((thread_py(py, thread)?, (key_py(py, key)?, *n)))?;
    }
    let ends = PyList::empty(py);
    for (thread, end) in b.first_ends.iter() {
        ends.append((thread_py(py, thread)?, end.as_ref().map(|(l, c)| (*l, c.as_str()))))?;
    }
    let open = PyList::empty(py);
    for (thread, o) in b.open.ordered() {
        open.append((thread_py(py, thread)?, open_py(&mut texts, o)?))?;
    }
    let started: Bound<'py, PyAny> = match &b.started.1 {
        Some(thread) => (b.started.0, thread_py(py, thread)?).into_pyobject(py)?.into_any(),
        None => (b.started.0, py.None()).into_pyobject(py)?.into_any(),
    };
    let bursts = (
        b.range_part,
        b.count,
        b.ambiguous,
        started,
        kept,
        groups,
        starts,
        ends,
        open,
    )
        .into_pyobject(py)?;
    let items: Vec<Bound<'py, PyAny>> = vec![
        t.source.as_deref().into_pyobject(py)?.into_any(),
        t.count.into_pyobject(py)?.into_any(),
        t.unrecoverable.into_pyobject(py)?.into_any(),
        t.unknown.into_pyobject(py)?.into_any(),
        PyBool::new(py, t.whole).to_owned().into_any(),
        (t.at.0, t.at.1.as_str()).into_pyobject(py)?.into_any(),
        t.guessed.into_pyobject(py)?.into_any(),
        codes.into_any(),
        t.actions.clone().into_pyobject(py)?.into_any(),
        nodes.into_any(),
        folds.into_any(),
        bundles.into_any(),
        prints.into_any(),
        sure.into_any(),
        bursts.into_any(),
        t.largest.as_deref().into_pyobject(py)?.into_any(),
    ];
    PyTuple::new(py, items)
}

/// One Python string per text while a unit's tally is exported: its rows repeat the same
/// sources, codes, stamps and fingerprints, which Python's own tally holds once each (the
/// findings' strings), so a unit's tally costs no more memory, nor pickle, than Python's.
struct Texts<'py> {
    py: Python<'py>,
    seen: HashMap<String, Bound<'py, PyString>>,
}

impl<'py> Texts<'py> {
    fn s(&mut self, v: &str) -> Bound<'py, PyAny> {
        if let Some(t) = self.seen.get(v) {
            return t.clone().into_any();
        }
        let t = PyString::new(self.py, v);
        self.seen.insert(v.to_string(), t.clone());
        t.into_any()
    }

    fn o(&mut self, v: Option<&str>) -> Bound<'py, PyAny> {
        match v {
            Some(v) => self.s(v),
            None => self.py.None().into_bound(self.py),
        }
    }

    fn list<'a>(&mut self, vs: impl IntoIterator<Item = &'a String>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(self.py);
        for v in vs {
            out.append(self.s(v))?;
        }
        Ok(out)
    }

    fn key(&mut self, k: &tally::Key) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            self.py,
            [self.s(&k.0), k.1.into_pyobject(self.py)?.into_any(), self.s(&k.2)],
        )
    }

    fn burst_key(&mut self, k: &tally::BurstKey) -> PyResult<Bound<'py, PyTuple>> {
        let py = self.py;
        PyTuple::new(
            py,
            [
                PyBool::new(py, k.0).to_owned().into_any(),
                PyBool::new(py, k.1).to_owned().into_any(),
                self.s(&k.2),
                self.s(&k.3),
                k.4.into_pyobject(py)?.into_any(),
                self.key(&k.5)?.into_any(),
                k.6.into_pyobject(py)?.into_any(),
            ],
        )
    }
}

fn export_unit<'py>(py: Python<'py>, u: tally::Unit<Obj>) -> PyResult<Bound<'py, PyTuple>> {
    let mut t = Texts {
        py,
        seen: HashMap::new(),
    };
    let codes = PyList::empty(py);
    for ((code, name, api, rule), (a, names)) in &u.codes.items {
        let key = PyTuple::new(py, [t.s(code), t.s(name), t.s(api), t.s(rule)])?;
        let row = PyTuple::new(
            py,
            [
                t.key(&a.first)?.into_any(),
                t.s(&a.action),
                a.recoverable.into_pyobject(py)?.to_owned().into_any(),
                a.count.into_pyobject(py)?.into_any(),
                t.o(a.first_seen.as_deref()),
                t.o(a.last_seen.as_deref()),
                t.list(&names.first)?.into_any(),
                names.count.into_pyobject(py)?.into_any(),
            ],
        )?;
        codes.append((key, row))?;
    }
    let nodes = PyList::empty(py);
    for (name, (n, names)) in &u.nodes.items {
        let kinds = PyList::empty(py);
        for (kind, count) in &n.kinds {
            kinds.append((t.s(kind), *count))?;
        }
        nodes.append((
            t.s(name),
            n.findings,
            n.unrecoverable,
            kinds,
            t.list(&names.first)?,
            names.count,
        ))?;
    }
    let folds = PyList::empty(py);
    for ((print, node), f) in &u.folds.items {
        folds.append((
            (t.s(print), t.o(node.as_deref())),
            obj(py, &f.first),
            obj(py, &f.last),
            f.count,
            t.o(f.first_seen.as_deref()),
            t.o(f.last_seen.as_deref()),
        ))?;
    }
    let bundles = PyList::empty(py);
    for (key, b) in &u.bundles.items {
        bundles.append((
            t.o(key.as_deref()),
            b.findings,
            b.unrecoverable,
            t.o(b.first.as_deref()),
            t.o(b.last.as_deref()),
            t.list(&b.nodes)?,
            if b.more_prints { None } else { Some(t.list(&b.prints)?) },
        ))?;
    }
    let prints = PyList::empty(py);
    for (key, p) in &u.prints.items {
        let bundles = PyList::empty(py);
        for b in &p.bundles {
            bundles.append(t.o(b.as_deref()))?;
        }
        prints.append((
            t.s(key),
            obj(py, &p.example),
            p.findings,
            t.o(p.first.as_deref()),
            t.o(p.last.as_deref()),
            bundles,
            t.list(&p.nodes)?,
        ))?;
    }
    let sure = PyList::empty(py);
    for (node, (key, stamp)) in &u.sure.items {
        sure.append((t.o(node.as_deref()), (t.key(key)?, t.s(stamp))))?;
    }
    let kept = PyList::empty(py);
    for (key, burst) in &u.bursts {
        kept.append((t.burst_key(key)?, burst_py(&mut t, burst)?))?;
    }
    let groups = PyList::empty(py);
    for (_, g) in &u.groups.items {
        groups.append((
            t.burst_key(&g.key)?,
            burst_py(&mut t, &g.first)?,
            g.bursts,
            g.findings,
            t.o(g.first_seen.as_deref()),
            t.o(g.last_seen.as_deref()),
        ))?;
    }
    let actions = PyList::empty(py);
    for (action, n) in &u.actions.items {
        actions.append((t.s(action), *n))?;
    }
    let items: Vec<Bound<'py, PyAny>> = vec![
        t.list(&u.sources)?.into_any(),
        t.list(&u.untallied)?.into_any(),
        PyBool::new(py, u.whole).to_owned().into_any(),
        u.guessed.into_pyobject(py)?.into_any(),
        u.count.into_pyobject(py)?.into_any(),
        u.unrecoverable.into_pyobject(py)?.into_any(),
        u.unknown.into_pyobject(py)?.into_any(),
        codes.into_any(),
        actions.into_any(),
        nodes.into_any(),
        folds.into_any(),
        bundles.into_any(),
        prints.into_any(),
        sure.into_any(),
        (u.burst_count, kept, groups).into_pyobject(py)?.into_any(),
        u.largest.as_deref().into_pyobject(py)?.into_any(),
    ];
    PyTuple::new(py, items)
}
