//! A reader of the `marshal` data the store spills (`run.store.RunWriter._spill`: a list of
//! `Finding` tuples), for the types those hold: None, bools, ints, str, tuples, lists and the
//! back-references marshal writes for an object met twice. Anything else (a float, bytes, an int
//! past i64, a str that is not UTF-8, such as a lone surrogate, a cut or trailing byte) is refused
//! with None, and Python reads that chunk itself. No PyO3 here: it runs without the GIL.

/// One object read, 16 bytes: a string as its number in `Parsed::strs`, a container as where its
/// items' node numbers lie in `Parsed::items` (no allocation per container).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    None,
    Bool(bool),
    Int(i64),
    Str(u32),
    Tuple(u32, u32),
    List(u32, u32),
}

/// One object as read from a `Parsed`.
#[derive(Debug, PartialEq)]
pub enum Item<'p, 'a> {
    None,
    Bool(bool),
    Int(i64),
    Str(&'a str),
    Tuple(&'p [u32]),
    List(&'p [u32]),
}

/// Every object of one marshalled value, and which of them is the value itself.
pub struct Parsed<'a> {
    nodes: Vec<Value>,
    strs: Vec<&'a str>,
    items: Vec<u32>,
    pub root: u32,
}

impl<'a> Parsed<'a> {
    /// The object numbered `node` (the root, or an item of a container).
    pub fn get(&self, node: u32) -> Item<'_, 'a> {
        let span = |at: u32, len: u32| at as usize..at as usize + len as usize;
        match self.nodes[node as usize] {
            Value::None => Item::None,
            Value::Bool(b) => Item::Bool(b),
            Value::Int(n) => Item::Int(n),
            Value::Str(n) => Item::Str(self.strs[n as usize]),
            Value::Tuple(at, len) => Item::Tuple(&self.items[span(at, len)]),
            Value::List(at, len) => Item::List(&self.items[span(at, len)]),
        }
    }
}

const FLAG_REF: u8 = 0x80;
const MAX_DEPTH: usize = 32; // a finding nests three deep; this bounds the stack on any bytes
const UNFILLED: u32 = u32::MAX;

/// The value marshalled in `data`, which must hold exactly one (and less than 4 GiB).
pub fn parse(data: &[u8]) -> Option<Parsed<'_>> {
    u32::try_from(data.len()).ok()?;
    let mut r = Reader {
        data,
        pos: 0,
        nodes: Vec::with_capacity(data.len() / 8),
        strs: Vec::new(),
        items: Vec::with_capacity(data.len() / 8),
        pending: Vec::new(),
        refs: Vec::new(),
    };
    let root = r.object(0)?;
    (r.pos == data.len()).then_some(Parsed {
        nodes: r.nodes,
        strs: r.strs,
        items: r.items,
        root,
    })
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    nodes: Vec<Value>,
    strs: Vec<&'a str>,
    items: Vec<u32>,   // the items of every container read, each container's together
    pending: Vec<u32>, // the items of the containers being read, innermost last
    refs: Vec<u32>,    // marshal's reference list: node number by reference number
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

    fn push(&mut self, v: Value) -> Option<u32> {
        self.nodes.push(v);
        u32::try_from(self.nodes.len() - 1).ok()
    }

    /// The next `n` bytes as a string, where they are UTF-8.
    fn text(&mut self, n: usize) -> Option<Value> {
        let s = std::str::from_utf8(self.take(n)?).ok()?;
        self.strs.push(s);
        Some(Value::Str(u32::try_from(self.strs.len() - 1).ok()?))
    }

    fn object(&mut self, depth: usize) -> Option<u32> {
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
            b'N' => self.push(Value::None)?,
            b'F' => self.push(Value::Bool(false))?,
            b'T' => self.push(Value::Bool(true))?,
            b'i' => {
                let n = self.i32()?;
                self.push(Value::Int(i64::from(n)))?
            }
            b'l' => {
                let n = self.long()?;
                self.push(Value::Int(n))?
            }
            b'u' | b't' | b'a' | b'A' => {
                let n = self.len()?;
                let v = self.text(n)?;
                self.push(v)?
            }
            b'z' | b'Z' => {
                let n = usize::from(self.byte()?);
                let v = self.text(n)?;
                self.push(v)?
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
                let first = self.pending.len();
                for _ in 0..n {
                    let item = self.object(depth + 1)?;
                    self.pending.push(item);
                }
                let at = u32::try_from(self.items.len()).ok()?;
                self.items.extend(self.pending.drain(first..));
                let len = n as u32; // n items took n bytes of the data at least
                self.push(if kind == b'[' {
                    Value::List(at, len)
                } else {
                    Value::Tuple(at, len)
                })?
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
