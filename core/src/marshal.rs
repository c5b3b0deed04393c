//! A reader of the `marshal` data the store spills (`run.store.RunWriter._spill`: a list of
//! `Finding` tuples), for the types those hold: None, bools, ints, str, tuples, lists and the
//! back-references marshal writes for an object met twice. Anything else (a float, bytes, an int
//! past i64, a str that is not UTF-8, such as a lone surrogate, a cut or trailing byte) is refused
//! with None, and Python reads that chunk itself. No PyO3 here: it runs without the GIL.

/// One object read: strings borrowed from the data, containers as the indices of their items.
#[derive(Debug, PartialEq)]
pub enum Value<'a> {
    None,
    Bool(bool),
    Int(i64),
    Str(&'a str),
    Tuple(Vec<usize>),
    List(Vec<usize>),
}

/// Every object of one marshalled value, and which of them is the value itself.
pub struct Parsed<'a> {
    pub nodes: Vec<Value<'a>>,
    pub root: usize,
}

const FLAG_REF: u8 = 0x80;
const MAX_DEPTH: usize = 32; // a finding nests three deep; this bounds the stack on any bytes
const UNFILLED: usize = usize::MAX;

/// The value marshalled in `data`, which must hold exactly one.
pub fn parse(data: &[u8]) -> Option<Parsed<'_>> {
    let mut r = Reader {
        data,
        pos: 0,
        nodes: Vec::new(),
        refs: Vec::new(),
    };
    let root = r.object(0)?;
    (r.pos == data.len()).then_some(Parsed { nodes: r.nodes, root })
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    nodes: Vec<Value<'a>>,
    refs: Vec<usize>, // marshal's reference list: node index by reference number
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn len(&mut self) -> Option<usize> {
        usize::try_from(self.i32()?).ok()
    }

    fn push(&mut self, v: Value<'a>) -> usize {
        self.nodes.push(v);
        self.nodes.len() - 1
    }

    fn object(&mut self, depth: usize) -> Option<usize> {
        if depth > MAX_DEPTH {
            return None;
        }
        let code = self.byte()?;
        let kind = code & !FLAG_REF;
        // marshal numbers the objects it may refer back to in the order their type bytes come
        // (a container's number is taken before its items are read)
        let slot = if code & FLAG_REF != 0 && b"ilutaAzZ()[".contains(&kind) {
            self.refs.push(UNFILLED);
            Some(self.refs.len() - 1)
        } else {
            None
        };
        let node = match kind {
            b'N' => self.push(Value::None),
            b'F' => self.push(Value::Bool(false)),
            b'T' => self.push(Value::Bool(true)),
            b'i' => {
                let n = self.i32()?;
                self.push(Value::Int(i64::from(n)))
            }
            b'l' => {
                let n = self.long()?;
                self.push(Value::Int(n))
            }
            b'u' | b't' | b'a' | b'A' => {
                let n = self.len()?;
                let s = std::str::from_utf8(self.take(n)?).ok()?;
                self.push(Value::Str(s))
            }
            b'z' | b'Z' => {
                let n = usize::from(self.byte()?);
                let s = std::str::from_utf8(self.take(n)?).ok()?;
                self.push(Value::Str(s))
            }
            b'(' | b')' | b'[' => {
                let n = if kind == b')' {
                    usize::from(self.byte()?)
                } else {
                    self.len()?
                };
                if n > self.data.len() - self.pos {
                    return None; // each item takes a byte at least
                }
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.object(depth + 1)?);
                }
                self.push(if kind == b'[' {
                    Value::List(items)
                } else {
                    Value::Tuple(items)
                })
            }
            b'r' => {
                let n = self.len()?;
                let node = *self.refs.get(n)?;
                return (node != UNFILLED).then_some(node);
            }
            _ => return None,
        };
        if let Some(slot) = slot {
            self.refs[slot] = node;
        }
        Some(node)
    }

    /// marshal's TYPE_LONG: a signed count of 15-bit digits, least significant first.
    fn long(&mut self) -> Option<i64> {
        let n = self.i32()?;
        let size = n.unsigned_abs() as usize;
        if size == 0 || size > 5 {
            return None; // 5 digits hold 75 bits; past i64 Python writes the finding
        }
        let mut value: i128 = 0;
        for k in 0..size {
            let digit = u16::from_le_bytes(self.take(2)?.try_into().ok()?);
            if digit >= 1 << 15 || (k == size - 1 && digit == 0) {
                return None;
            }
            value |= i128::from(digit) << (15 * k);
        }
        i64::try_from(if n < 0 { -value } else { value }).ok()
    }
}
