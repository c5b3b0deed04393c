//! A finding's JSON line, the twin of `analyzer.core.serial._fast` (no PyO3 here, so proptest runs
//! it on any text): the JSON string escaping of CPython's `json.encoder.encode_basestring`
//! (`ensure_ascii=False`): `"` and `\` escaped, `\n \r \t \b \f` by name, other C0 controls as
//! `\u00XX` in lower-case hex, everything else (DEL, non-ASCII) as it is.

use std::fmt::Write;

use crate::marshal;

/// `s` as a JSON string, appended to `out`.
pub fn push_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    // a byte JSON escapes; a UTF-8 continuation or lead byte is >= 0x80: never a cut here
    let escaped = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    let mut start = 0;
    // 32 bytes at a time: a run with nothing to escape is passed by one branch-free test (it
    // vectorises), a run with something is walked byte by byte
    for (k, chunk) in bytes.chunks(32).enumerate() {
        if chunk.iter().fold(0u8, |any, &b| any | u8::from(escaped(b))) == 0 {
            continue;
        }
        for (j, &b) in chunk.iter().enumerate() {
            if !escaped(b) {
                continue;
            }
            let at = k * 32 + j;
            out.push_str(&s[start..at]);
            match b {
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                b'\n' => out.push_str("\\n"),
                b'\r' => out.push_str("\\r"),
                b'\t' => out.push_str("\\t"),
                0x08 => out.push_str("\\b"),
                0x0c => out.push_str("\\f"),
                _ => {
                    let _ = write!(out, "\\u{:04x}", b);
                }
            }
            start = at + 1;
        }
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// `null` or the string.
pub fn push_opt(out: &mut String, s: Option<&str>) {
    match s {
        None => out.push_str("null"),
        Some(s) => push_string(out, s),
    }
}

/// One item of a finding as it is held (a Python object, or a value `marshal` wrote): each
/// accessor answers None where the item is not of that exact type (a subclass, a bool for an int),
/// and the finding is then Python's to write.
pub trait Field: Sized {
    fn text(&self) -> Option<Option<&str>>;
    fn int(&self) -> Option<Option<i64>>;
    fn flag(&self) -> Option<Option<bool>>;
    /// The items of an exact tuple.
    fn tuple(&self) -> Option<Vec<Self>>;
}

/// Items of a `Finding` (`core.records.Finding`'s field order).
pub const FIELDS: usize = 33;

/// A finding's JSON line, byte for byte `serial._fast`'s: `items` its 33 fields, `shift` added to
/// its line, API line and causes' lines (`records.shifted`), `rule_texts` writing the
/// `"remedy": ..., "references": ...` of its rule id as `serial._cached` encodes them (None: a rule
/// it does not know). None wherever Python must write it: an item of another type, a rule not known,
/// a line past i64.
pub fn finding_line<F: Field>(
    items: &[F],
    shift: i64,
    rule_texts: impl FnOnce(&str, &mut String) -> Option<()>,
) -> Option<String> {
    if items.len() != FIELDS {
        return None;
    }
    let text = |i: usize| items[i].text();
    let must = |i: usize| items[i].text().flatten();
    let moved = |n: i64| n.checked_add(shift);
    fn push_key(out: &mut String, key: &str) {
        out.push_str(", \"");
        out.push_str(key);
        out.push_str("\": ");
    }
    fn push_flag(out: &mut String, v: Option<bool>) {
        out.push_str(match v {
            None => "null",
            Some(true) => "true",
            Some(false) => "false",
        });
    }
    fn push_int(out: &mut String, v: Option<i64>) {
        match v {
            None => out.push_str("null"),
            Some(n) => {
                let _ = write!(out, "{n}");
            }
        }
    }
    let rule = must(9)?;
    let mut o = String::with_capacity(1024);
    o.push_str("{\"source\": ");
    push_string(&mut o, must(0)?);
    o.push_str(", \"line\": ");
    push_int(&mut o, Some(moved(items[1].int().flatten()?)?));
    o.push_str(", \"timestamp\": ");
    push_opt(&mut o, text(2)?);
    o.push_str(", \"time_source\": ");
    push_opt(&mut o, text(31)?);
    o.push_str(", \"inferred_time\": ");
    push_opt(&mut o, text(23)?);
    o.push_str(", \"code\": ");
    push_string(&mut o, must(3)?);
    o.push_str(", \"name\": ");
    push_opt(&mut o, text(4)?);
    o.push_str(", \"known\": ");
    push_flag(&mut o, items[16].flag()?);
    o.push_str(", \"api\": ");
    push_opt(&mut o, text(5)?);
    o.push_str(", \"api_evidence\": ");
    push_opt(&mut o, text(6)?);
    o.push_str(", \"api_line\": ");
    push_int(
        &mut o,
        match items[7].int()? {
            None => None,
            Some(n) => Some(moved(n)?),
        },
    );
    o.push_str(", \"recoverable\": ");
    push_flag(&mut o, items[8].flag()?);
    o.push_str(", \"rule\": ");
    push_string(&mut o, rule);
    o.push_str(", \"fingerprint\": ");
    push_string(&mut o, must(24)?);
    o.push_str(", \"action\": ");
    push_string(&mut o, must(10)?);
    rule_texts(rule, &mut o)?;
    o.push_str(", \"form\": ");
    push_string(&mut o, must(12)?);
    o.push_str(", \"in_cluster_results\": ");
    push_flag(&mut o, items[15].flag()?);
    for (key, i) in [
        ("bundle", 25),
        ("node", 18),
        ("pod", 26),
        ("container", 27),
        ("stream", 28),
        ("envelope", 29),
        ("envelope_time", 30),
    ] {
        push_key(&mut o, key);
        push_opt(&mut o, text(i)?);
    }
    o.push_str(", \"kind\": ");
    push_string(&mut o, must(19)?);
    for (key, i) in [("device", 20), ("pid", 13), ("tid", 14)] {
        push_key(&mut o, key);
        push_opt(&mut o, text(i)?);
    }
    o.push_str(", \"causes\": [");
    // (line, family, code, meaning) each, as `serial._cached` writes `_plain(causes)`
    for (n, cause) in items[22].tuple()?.iter().enumerate() {
        let c = cause.tuple()?;
        if c.len() != 4 {
            return None;
        }
        if n > 0 {
            o.push_str(", ");
        }
        o.push_str("{\"line\": ");
        push_int(&mut o, Some(moved(c[0].int().flatten()?)?));
        for (key, i) in [("family", 1), ("code", 2), ("meaning", 3)] {
            push_key(&mut o, key);
            push_string(&mut o, c[i].text().flatten()?);
        }
        o.push('}');
    }
    o.push_str("], \"link\": {");
    // (kind, value) each, as `serial._link` writes them
    for (n, pair) in items[32].tuple()?.iter().enumerate() {
        let kv = pair.tuple()?;
        if kv.len() != 2 {
            return None;
        }
        if n > 0 {
            o.push_str(", ");
        }
        push_string(&mut o, kv[0].text().flatten()?);
        o.push_str(": ");
        push_string(&mut o, kv[1].text().flatten()?);
    }
    o.push_str("}, \"text\": ");
    push_string(&mut o, must(11)?);
    o.push('}');
    Some(o)
}

/// `"remedy": R, "references": X`, the texts already JSON.
pub fn push_rule_texts(o: &mut String, remedy: &str, references: &str) {
    o.push_str(", \"remedy\": ");
    o.push_str(remedy);
    o.push_str(", \"references\": ");
    o.push_str(references);
}

/// A finding item as `marshal` wrote it.
pub struct Marshalled<'p, 'a> {
    parsed: &'p marshal::Parsed<'a>,
    node: u32,
}

impl Field for Marshalled<'_, '_> {
    fn text(&self) -> Option<Option<&str>> {
        match self.parsed.get(self.node) {
            marshal::Item::None => Some(None),
            marshal::Item::Str(s) => Some(Some(s)),
            _ => None,
        }
    }
    fn int(&self) -> Option<Option<i64>> {
        match self.parsed.get(self.node) {
            marshal::Item::None => Some(None),
            marshal::Item::Int(n) => Some(Some(n)),
            _ => None,
        }
    }
    fn flag(&self) -> Option<Option<bool>> {
        match self.parsed.get(self.node) {
            marshal::Item::None => Some(None),
            marshal::Item::Bool(b) => Some(Some(b)),
            _ => None,
        }
    }
    fn tuple(&self) -> Option<Vec<Self>> {
        match self.parsed.get(self.node) {
            marshal::Item::Tuple(items) => Some(
                items
                    .iter()
                    .map(|&node| Marshalled {
                        parsed: self.parsed,
                        node,
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// The findings of a spilled chunk (`marshal::parse` of it): the items of its list, or None
/// where it is not one.
pub fn chunk_findings<'p>(parsed: &'p marshal::Parsed<'_>) -> Option<&'p [u32]> {
    match parsed.get(parsed.root) {
        marshal::Item::List(findings) => Some(findings),
        _ => None,
    }
}

/// Appends to `out` the JSON lines of `findings` (some of a chunk's), joined by `sep`, their
/// lines moved by `shift`; None where Python must read the chunk (a value outside `finding_line`'s
/// types, an unknown rule).
pub fn push_chunk_lines(
    parsed: &marshal::Parsed<'_>,
    findings: &[u32],
    rules: &std::collections::HashMap<String, (String, String)>,
    shift: i64,
    sep: &str,
    out: &mut String,
) -> Option<()> {
    for (n, &f) in findings.iter().enumerate() {
        let items = Marshalled { parsed, node: f }.tuple()?;
        let line = finding_line(&items, shift, |rule, o| {
            let (remedy, references) = rules.get(rule)?;
            push_rule_texts(o, remedy, references);
            Some(())
        })?;
        if n > 0 {
            out.push_str(sep);
        }
        out.push_str(&line);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_cpython_does() {
        let mut out = String::new();
        push_string(&mut out, "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{1}i\u{1f}\u{7f}é中");
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\re\\tf\\bg\\fh\\u0001i\\u001f\u{7f}é中\"");
    }
}
