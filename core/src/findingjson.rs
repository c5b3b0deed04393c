//! A finding's JSON line, the twin of `analyzer.core.serial._fast` (no PyO3 here, so proptest runs
//! it on any text): the JSON string escaping of CPython's `json.encoder.encode_basestring`
//! (`ensure_ascii=False`): `"` and `\` escaped, `\n \r \t \b \f` by name, other C0 controls as
//! `\u00XX` in lower-case hex, everything else (DEL, non-ASCII) as it is.

use std::fmt::Write;

/// `s` as a JSON string, appended to `out`.
pub fn push_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue; // a UTF-8 continuation or lead byte is >= 0x80: never a cut here
        }
        out.push_str(&s[start..i]);
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
        start = i + 1;
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
