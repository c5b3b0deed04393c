//! The engine in the core as Python sees it (issue #17): `Detector` (the tables of one engine,
//! built once), `Block` (a block a `Scan` in native mode hands back whole) and `Stream` (one
//! plain stream's engine, `detect.rs`, with the Python callbacks it asks).
//!
//! What crosses per block: the `Block` object (the buffer, its candidates and their fact-table
//! answers, never a tuple per line), then back a list of `Finding`s. What crosses per rare event:
//! a rule not yet remembered, a possible proof of recovery, and a line the core does not read
//! (with the stream's state, both ways). At the stream's end: its node facts and related errors.

use std::collections::HashMap;
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

/// The Python callables a stream asks.
struct Callbacks {
    rule: Py<PyAny>, // (value, api, in_cluster, nearby, versions) -> (rule, action, recoverable, name, known, generic, asked)
    find_proof: Py<PyAny>, // (text) -> proof id or None
    note_proof: Py<PyAny>, // (line, timestamp, node, proof, pid, clusters, addrs, text, year_guessed)
    decline: Py<PyAny>, // (state, (number, offset, start, raw, tier), buf, first_line_no) -> (findings, state)
    make: Py<PyAny>, // tuple.__new__
    finding: Py<PyAny>, // records.Finding
}

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
}

fn opt<'py>(py: Python<'py>, s: &Option<String>) -> Bound<'py, PyAny> {
    match s {
        Some(s) => PyString::new(py, s).into_any(),
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
    err: Option<PyErr>,
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
            _ => PyBool::new(py, facts_only).to_owned().into_any(),
        };
        let row = export(self.tables, state);
        let got = self
            .calls
            .decline
            .bind(py)
            .call1((row, (n, off, start, raw, tier), buf, self.blk.first_line_no))
            .and_then(|r| r.extract::<(Bound<'py, PyAny>, StateRow)>());
        match got {
            Ok((found, row)) => match import(self.tables, state, row) {
                Ok(()) => Ok(found),
                Err(e) => self.fail(e),
            },
            Err(e) => self.fail(e),
        }
    }
}

impl Stream {
    fn finding<'py>(&mut self, py: Python<'py>, f: FindingRec) -> PyResult<Bound<'py, PyAny>> {
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
                .into_iter()
                .map(|(n, family, code, meaning)| (n, family, code, meaning).into_pyobject(py))
                .collect::<PyResult<Vec<_>>>()?,
        )?;
        let link = PyTuple::new(
            py,
            f.link
                .into_iter()
                .map(|(k, v)| (PyString::intern(py, &k), v).into_pyobject(py))
                .collect::<PyResult<Vec<_>>>()?,
        )?;
        let r = &f.rule;
        let none = || py.None().into_bound(py);
        let items: [Bound<'py, PyAny>; 33] = [
            s.source.bind(py).clone(),
            f.line.into_pyobject(py)?.into_any(),
            opt(py, &f.timestamp),
            PyString::new(py, &f.code).into_any(),
            opt(py, &r.name),
            opt(py, &f.api),
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
            opt(py, &f.pid),
            opt(py, &f.tid),
            PyBool::new(py, f.in_cluster_results).to_owned().into_any(),
            PyBool::new(py, r.known).to_owned().into_any(),
            PyBool::new(py, r.generic).to_owned().into_any(),
            s.node.bind(py).clone(),
            s.kind.bind(py).clone(),
            s.device.bind(py).clone(),
            PyBool::new(py, f.year_guessed).to_owned().into_any(),
            causes.into_any(),
            opt(py, &f.time_hint),
            PyString::new(py, &f.fingerprint).into_any(),
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
    #[pyo3(signature = (detector, name, layout, bundle, default_node, year, year_guessed, max_related, callbacks, finding))]
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
        callbacks: (Py<PyAny>, Py<PyAny>, Py<PyAny>, Py<PyAny>),
        finding: Py<PyAny>,
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
        let (rule, find_proof, note_proof, decline) = callbacks;
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
                make,
                finding,
            },
            shared,
            rules: HashMap::new(),
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
                Item::Found(f) => out.append(self.finding(py, *f)?)?,
                Item::Python(found) => {
                    for f in found.try_iter()? {
                        out.append(f?)?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// The stream's state as `_StreamState.from_core` reads it.
    fn state(&self) -> StateRow {
        export(&self.tables, &self.state)
    }

    /// Take the state Python leaves (`_StreamState.to_core`): before the first block, a byte
    /// range's state after its history.
    fn set_state(&mut self, row: StateRow) -> PyResult<()> {
        import(&self.tables, &mut self.state, row)
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
