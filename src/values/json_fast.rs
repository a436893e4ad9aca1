//! JSON values straight into Arrow, driven by the target type.
//!
//! The target type is compiled once per piece into a plan ([`Plan`]) and a
//! tree of column builders ([`Col`]) mirroring it. Each value is then read by
//! one recursive-descent pass that writes into those builders as it goes: no
//! tape, no intermediate values, no second pass over the document.
//!
//! - Strings without escapes are found by a 16-byte SIMD scan (SSE2, the
//!   x86-64 baseline; 8 bytes at a time elsewhere) and copied once into the
//!   column's value buffer; only strings holding non-ASCII bytes are checked
//!   as UTF-8, and only their bytes.
//! - Field names are matched against a table built from the schema: the
//!   field after the last one matched is tried first (producers write fields
//!   in one order), as its whole `"name":` token in one or two masked 16-byte
//!   compares; then a bucket keyed on the name's length and end bytes.
//! - The leaves most documents are made of (strings, short decimals and
//!   integers) are read in the object loop itself, in one pass over their
//!   bytes; errors are built out of line, so the paths for good values stay
//!   short.
//! - A row is known to be one value once the value ends and only whitespace
//!   follows it.
//! - Columns are sized from the last piece the plan parsed (items and
//!   string bytes per row, bounded by this piece's bytes), so they don't grow
//!   as they fill, and their buffers come from `memory`'s pool.
//! - A bad value rolls every builder back to the row's start ([`Col::truncate`]),
//!   then either stops the piece with its reason or becomes a null row; the
//!   rows around it are kept.
//!
//! The rules are Spark's `from_json` as `spark_json` gives them to
//! arrow-json, and the path gives the same columns as arrow-json's (the fuzz
//! target `json_values` and the property tests compare them), except that the
//! grammar is RFC 8259's, as Jackson reads it: arrow-json's tape tolerates
//! missing or doubled commas, raw control characters in strings and
//! malformed numbers (`01`, `1-2`), which fail here. Types it does not cover
//! (see [`Plan::new`]) keep arrow-json, as does a piece holding an object
//! with a repeated field name (arrow-json keeps the last; builders written in
//! order can't).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use arrow_array::timezone::Tz;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type,
    UInt8Type,
};
use arrow_array::{
    ArrayRef, BooleanArray, LargeListArray, ListArray, MapArray, PrimitiveArray, StringArray, StructArray,
};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, FieldRef, Fields, TimeUnit};

use super::spark_json::MAX_NESTING_DEPTH;
use super::{strip_confluent, OnValueError, RowError, Values};
use crate::memory;

thread_local! {
    static DISABLED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with the fast path off on this thread: values parse with
/// arrow-json alone, as before the fast path (tests and fuzzers compare the two).
pub fn without_fast_path<R>(f: impl FnOnce() -> R) -> R {
    let was = DISABLED.with(|d| d.replace(true));
    let out = f();
    DISABLED.with(|d| d.set(was));
    out
}

/// The values of one piece parsed into `data_type`, or `None` when this path
/// can't give arrow-json's result (the type is not covered, or an object
/// repeats a field name) and the caller must parse the piece with arrow-json.
pub(super) fn parse(
    plan: Option<&Plan>,
    values: &Values,
    first_row: usize,
    on_error: OnValueError,
    confluent: bool,
) -> Result<Option<ArrayRef>, RowError> {
    if DISABLED.with(|d| d.get()) {
        return Ok(None);
    }
    let Some(plan) = plan else {
        return Ok(None);
    };
    // A bug here must not cost the rows: the piece goes to arrow-json instead.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parse_piece(plan, values, first_row, on_error, confluent)
    }))
    .unwrap_or(Ok(None))
}

fn parse_piece(
    plan: &Plan,
    values: &Values,
    first_row: usize,
    on_error: OnValueError,
    confluent: bool,
) -> Result<Option<ArrayRef>, RowError> {
    let rows = values.len();
    // No column can hold more items or string bytes than the piece has
    // bytes: the bound on sizes learnt from a piece unlike this one.
    let bytes = (0..rows).filter_map(|row| values.get(row)).map(<[u8]>::len).sum();
    let mut root = Col::new(&plan.root, rows, &mut plan.sizes(rows, bytes));
    let mut scratch = Vec::new();
    for row in 0..rows {
        let Some(value) = values.get(row) else {
            root.push_null();
            continue;
        };
        let result = match if confluent { strip_confluent(value) } else { Ok(value) } {
            Ok(document) => {
                let mut parser = Parser::new(document, &mut scratch);
                match parser.document(&mut root) {
                    // arrow-json keeps the last of repeated names and never
                    // reads the others, so a value that doesn't fit may not matter.
                    Err(f) if matches!(*f, Failure::Fit(_)) && repeats_a_name(document) => Err(None),
                    other => other.map_err(|f| f.reason()),
                }
            }
            Err(reason) => Err(Some(reason)),
        };
        match result {
            Ok(()) => {}
            Err(None) => return Ok(None),
            Err(Some(reason)) => {
                if on_error == OnValueError::Raise {
                    return Err(RowError {
                        row: first_row + row,
                        reason,
                    });
                }
                root.truncate(row);
                root.push_null();
            }
        }
    }
    root.learn(&mut plan.sizes(rows, bytes));
    // Arrow's own checks of the finished arrays; a failure there is ours, and arrow-json decides.
    Ok(root.finish().ok())
}

/// An error if `document` is not one JSON value by the grammar this path
/// reads (RFC 8259's, as Jackson reads it, nesting at most
/// [`MAX_NESTING_DEPTH`] deep), for values parsed with arrow-json instead,
/// whose tape tolerates text this path refuses: a value fails or passes
/// alike on either path.
pub(super) fn check_grammar(document: &[u8]) -> Result<(), String> {
    let mut scratch = Vec::new();
    let mut p = Parser::new(document, &mut scratch);
    p.whole(Parser::skip)
        .map_err(|f| f.reason().unwrap_or_else(|| "malformed JSON".into()))
}

/// Whether some object in `document` gives a name twice (read leniently:
/// only for a value that already failed).
fn repeats_a_name(document: &[u8]) -> bool {
    let mut scratch = Vec::new();
    let mut p = Parser::new(document, &mut scratch);
    // Per open container: the names an object has given so far (None: an array).
    let mut open: Vec<Option<Vec<Vec<u8>>>> = Vec::new();
    loop {
        p.ws();
        let Some(&c) = document.get(p.i) else {
            return false;
        };
        match c {
            b'{' | b'[' => {
                open.push((c == b'{').then(Vec::new));
                p.i += 1;
            }
            b'}' | b']' => {
                open.pop();
                p.i += 1;
            }
            b',' | b':' => p.i += 1,
            b'"' => {
                let mut text = Vec::new();
                if p.string(&mut text).is_err() {
                    return false;
                }
                p.ws();
                if document.get(p.i) == Some(&b':') {
                    if let Some(Some(names)) = open.last_mut() {
                        if names.contains(&text) {
                            return true;
                        }
                        names.push(text);
                    }
                }
            }
            _ => {
                let rest = &document[p.i..];
                let len = rest
                    .iter()
                    .position(|b| {
                        matches!(
                            b,
                            b' ' | b'\n' | b'\r' | b'\t' | b',' | b':' | b']' | b'}' | b'"' | b'{' | b'['
                        )
                    })
                    .unwrap_or(rest.len());
                p.i += len.max(1);
            }
        }
    }
}

/// What the builders are, decided from the target type before any value.
#[derive(Debug)]
pub struct Plan {
    root: Node,
    /// Per column (in the order [`Col::new`] makes them), two sizes per row
    /// of the last piece parsed, in 1/256ths: its items (values, offsets)
    /// and its string bytes. The next piece's columns are sized from them,
    /// so they neither grow as they fill (each growth a copy into fresh
    /// memory) nor ask the buffer pool for much more than they use.
    sizes: Box<[AtomicU64]>,
}

/// A plan's learnt column sizes, read or written in column order.
struct Sizes<'p> {
    per_row: &'p [AtomicU64],
    rows: usize,
    /// The most any column of this piece can need.
    most: usize,
    at: usize,
}

impl Sizes<'_> {
    /// The next column's items and bytes for this piece: as the last piece
    /// ran per row, with an eighth more; `items` and `bytes` before any piece.
    fn next(&mut self, items: usize, bytes: usize) -> (usize, usize) {
        let learnt = |k: usize| {
            let per_row = self.per_row.get(k).map_or(0, |s| s.load(Relaxed)) as usize;
            memory::learnt_room(per_row, self.rows, 16, self.most)
        };
        let out = if self.per_row.get(2 * self.at).is_some_and(|s| s.load(Relaxed) > 0) {
            (learnt(2 * self.at), learnt(2 * self.at + 1))
        } else {
            (items, bytes)
        };
        self.at += 1;
        out
    }

    /// Keep this column's items and bytes per row of this piece.
    fn keep(&mut self, items: usize, bytes: usize) {
        // At least 1: 0 is "never learnt".
        let per_row = |n: usize| memory::per_row(n, self.rows).max(1) as u64;
        if let Some(s) = self.per_row.get(2 * self.at) {
            s.store(per_row(items), Relaxed);
        }
        if let Some(s) = self.per_row.get(2 * self.at + 1) {
            s.store(per_row(bytes), Relaxed);
        }
        self.at += 1;
    }
}

#[derive(Debug)]
enum Node {
    Bool,
    /// Signed integers of `data_type`, in `lo..=hi`.
    Int {
        lo: i64,
        hi: i64,
        data_type: DataType,
    },
    /// Unsigned integers of `data_type`, in `0..=hi`.
    UInt {
        hi: u64,
        data_type: DataType,
    },
    Float32,
    Float64,
    Timestamp {
        unit: TimeUnit,
        tz: Tz,
        data_type: DataType,
    },
    /// Spark's string: any JSON value, as text.
    Text,
    Struct(StructPlan),
    List {
        field: FieldRef,
        item: Box<Node>,
        large: bool,
    },
    Map {
        entries: FieldRef,
        sorted: bool,
        value: Box<Node>,
        value_nullable: bool,
    },
}

#[derive(Debug)]
struct StructPlan {
    fields: Fields,
    nodes: Vec<Node>,
    /// The field names (`None` for a name an earlier field has: arrow-json
    /// matches the first), and per bucket (see `bucket`) the fields whose
    /// name falls in it.
    names: Vec<Option<Box<[u8]>>>,
    /// Per field, its name's [`Head`] (a length no key has for a `None` name).
    heads: Vec<Head>,
    buckets: Vec<Vec<u32>>,
    /// Per field, its name as a compact document writes it (see [`Token`]).
    tokens: Vec<Token>,
    /// Per field, its name as a compact document writes it after another
    /// member: the comma, then the token.
    next_tokens: Vec<Token>,
    /// Per field, whether it may be null.
    nullable: Vec<bool>,
}

/// A field's `"name":` as compact JSON writes it, matched at a key's opening
/// quote by one or two masked 16-byte compares: a match is that field's
/// name, its closing quote and the colon, so name lookup, the end-quote scan
/// and the colon check are one step for the documents most producers write.
#[derive(Clone, Copy, Debug)]
struct Token {
    /// The token's length, 3 to 32 (0: the name has no token, and never matches).
    len: usize,
    bytes: [u8; 32],
    masks: [u128; 2],
}

impl Token {
    /// The token of no name: it never matches.
    const NONE: Token = Token {
        len: 0,
        bytes: [0; 32],
        masks: [0; 2],
    };

    /// The token of `name`, if it is at most 32 bytes and the name needs no
    /// escape (else a `Token` that never matches).
    fn of(name: &[u8]) -> Token {
        Token::after(b"", name)
    }

    /// The token of `name` after `lead` (`,` for the member after another),
    /// under the same conditions as [`Token::of`].
    fn after(lead: &[u8], name: &[u8]) -> Token {
        let len = lead.len() + name.len() + 3;
        if len > 32 || name.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\') {
            return Token::NONE;
        }
        let mut bytes = [0u8; 32];
        bytes[..lead.len()].copy_from_slice(lead);
        bytes[lead.len()] = b'"';
        bytes[lead.len() + 1..len - 2].copy_from_slice(name);
        bytes[len - 2] = b'"';
        bytes[len - 1] = b':';
        let mask = |n: usize| match n {
            0 => 0,
            16.. => u128::MAX,
            n => (1u128 << (n * 8)) - 1,
        };
        Token {
            len,
            bytes,
            masks: [mask(len), mask(len.saturating_sub(16))],
        }
    }

    /// Whether `b[i..]` starts with this token.
    #[inline(always)]
    fn at(&self, b: &[u8], i: usize) -> bool {
        let half = |k: usize, bytes: &[u8]| {
            let mut x = [0u8; 16];
            x.copy_from_slice(&bytes[16 * k..16 * k + 16]);
            u128::from_le_bytes(x) & self.masks[k]
        };
        let want = |k: usize| half(k, &self.bytes);
        if self.len <= 16 {
            match b.get(i..i + 16) {
                Some(x) => self.len != 0 && half(0, x) == want(0),
                None => self.len != 0 && b.get(i..i + self.len) == Some(&self.bytes[..self.len]),
            }
        } else {
            match b.get(i..i + 32) {
                Some(x) => half(0, x) == want(0) && half(1, x) == want(1),
                None => b.get(i..i + self.len) == Some(&self.bytes[..self.len]),
            }
        }
    }
}

/// A name's length and first 16 bytes (zero past its end): for names of up
/// to 16 bytes, equal heads are equal names, compared without a `memcmp` call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Head {
    len: usize,
    first: u128,
}

impl Head {
    /// The head of `name`, from its own bytes.
    fn of(name: &[u8]) -> Head {
        let mut first = [0u8; 16];
        let n = name.len().min(16);
        first[..n].copy_from_slice(&name[..n]);
        Head {
            len: name.len(),
            first: u128::from_le_bytes(first),
        }
    }

    /// The head of the name `b[from..to]`: one 16-byte load when `b` holds
    /// 16 bytes from `from`.
    #[inline]
    fn at(b: &[u8], from: usize, to: usize) -> Head {
        let len = to - from;
        match b.get(from..from + 16) {
            Some(bytes) => {
                let mut first = [0u8; 16];
                first.copy_from_slice(bytes);
                let first = u128::from_le_bytes(first);
                let mask = if len >= 16 { u128::MAX } else { (1u128 << (len * 8)) - 1 };
                Head {
                    len,
                    first: first & mask,
                }
            }
            None => Head::of(&b[from..to]),
        }
    }
}

const BUCKETS: usize = 64;

fn bucket(name: &[u8]) -> usize {
    let (first, last) = (name.first().copied().unwrap_or(0), name.last().copied().unwrap_or(0));
    (name.len().wrapping_mul(7) ^ usize::from(first).wrapping_mul(31) ^ usize::from(last)) % BUCKETS
}

impl StructPlan {
    /// The field named `key`, trying `expect` (the field after the last match) first.
    #[inline]
    fn lookup(&self, key: &[u8], head: Head, expect: usize) -> Option<usize> {
        let is = |k: usize| self.heads[k] == head && (head.len <= 16 || self.names[k].as_deref() == Some(key));
        if expect < self.heads.len() && is(expect) {
            return Some(expect);
        }
        self.buckets[bucket(key)].iter().map(|&k| k as usize).find(|&k| is(k))
    }
}

impl Plan {
    /// The plan for `data_type`, or `None` if some type in it is not one this
    /// path reads: booleans, integers, `Float32`/`Float64`, `Utf8`,
    /// timestamps, structs, lists and large lists, and maps with `Utf8` keys
    /// are; dates, times, durations, decimals, binary, `LargeUtf8`,
    /// `Utf8View`, `Float16`, `Null`, fixed-size and view lists, unions,
    /// dictionaries and run-end encoding keep arrow-json.
    pub(super) fn new(data_type: &DataType) -> Option<Plan> {
        let root = Node::new(data_type)?;
        let columns = root.columns();
        Some(Plan {
            root,
            sizes: (0..2 * columns).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// The learnt sizes, for a piece of `rows` values of `bytes` bytes.
    fn sizes(&self, rows: usize, bytes: usize) -> Sizes<'_> {
        Sizes {
            per_row: &self.sizes,
            rows,
            most: bytes.saturating_add(16),
            at: 0,
        }
    }
}

impl Node {
    /// How many columns [`Col::new`] makes for this node.
    fn columns(&self) -> usize {
        1 + match self {
            Node::Struct(plan) => plan.nodes.iter().map(Node::columns).sum(),
            Node::List { item, .. } => item.columns(),
            Node::Map { value, .. } => 1 + value.columns(),
            _ => 0,
        }
    }

    fn new(data_type: &DataType) -> Option<Node> {
        let int = |lo: i64, hi: i64| Node::Int {
            lo,
            hi,
            data_type: data_type.clone(),
        };
        let uint = |hi: u64| Node::UInt {
            hi,
            data_type: data_type.clone(),
        };
        Some(match data_type {
            DataType::Boolean => Node::Bool,
            DataType::Int8 => int(i8::MIN.into(), i8::MAX.into()),
            DataType::Int16 => int(i16::MIN.into(), i16::MAX.into()),
            DataType::Int32 => int(i32::MIN.into(), i32::MAX.into()),
            DataType::Int64 => int(i64::MIN, i64::MAX),
            DataType::UInt8 => uint(u8::MAX.into()),
            DataType::UInt16 => uint(u16::MAX.into()),
            DataType::UInt32 => uint(u32::MAX.into()),
            DataType::UInt64 => uint(u64::MAX),
            DataType::Float32 => Node::Float32,
            DataType::Float64 => Node::Float64,
            DataType::Utf8 => Node::Text,
            DataType::Timestamp(unit, tz) => Node::Timestamp {
                unit: *unit,
                // arrow-json reads a timestamp without a zone as UTC.
                tz: tz.as_deref().unwrap_or("+00:00").parse().ok()?,
                data_type: data_type.clone(),
            },
            DataType::Struct(fields) => {
                let nodes = fields
                    .iter()
                    .map(|f| Node::new(f.data_type()))
                    .collect::<Option<Vec<_>>>()?;
                let mut names: Vec<Option<Box<[u8]>>> = Vec::with_capacity(fields.len());
                let mut buckets = vec![Vec::new(); BUCKETS];
                for (k, f) in fields.iter().enumerate() {
                    let name = f.name().as_bytes();
                    // A name given twice matches its first field, as in arrow-json.
                    if fields[..k].iter().any(|g| g.name() == f.name()) {
                        names.push(None);
                        continue;
                    }
                    buckets[bucket(name)].push(u32::try_from(k).ok()?);
                    names.push(Some(name.into()));
                }
                let heads = names
                    .iter()
                    .map(|n| {
                        n.as_deref().map_or(
                            Head {
                                len: usize::MAX,
                                first: 0,
                            },
                            Head::of,
                        )
                    })
                    .collect();
                let tokens = names
                    .iter()
                    .map(|n| n.as_deref().map_or(Token::NONE, Token::of))
                    .collect();
                let next_tokens = names
                    .iter()
                    .map(|n| n.as_deref().map_or(Token::NONE, |n| Token::after(b",", n)))
                    .collect();
                Node::Struct(StructPlan {
                    fields: fields.clone(),
                    nodes,
                    names,
                    heads,
                    buckets,
                    tokens,
                    next_tokens,
                    nullable: fields.iter().map(|f| f.is_nullable()).collect(),
                })
            }
            DataType::List(field) | DataType::LargeList(field) => Node::List {
                field: field.clone(),
                item: Box::new(Node::new(field.data_type())?),
                large: matches!(data_type, DataType::LargeList(_)),
            },
            DataType::Map(entries, sorted) => {
                let DataType::Struct(kv) = entries.data_type() else {
                    return None;
                };
                if kv.len() != 2 || *kv[0].data_type() != DataType::Utf8 {
                    return None;
                }
                Node::Map {
                    entries: entries.clone(),
                    sorted: *sorted,
                    value: Box::new(Node::new(kv[1].data_type())?),
                    value_nullable: kv[1].is_nullable(),
                }
            }
            _ => return None,
        })
    }
}

/// A column's validity, kept as a count until its first null: most columns
/// have none, and then no bit is written per value.
struct Valid {
    len: usize,
    /// One bit per row, from the first null on (`None`: every row is valid).
    bits: Option<BooleanBufferBuilder>,
    /// Rows expected, for the bits' first allocation.
    capacity: usize,
}

impl Valid {
    fn new(capacity: usize) -> Valid {
        Valid {
            len: 0,
            bits: None,
            capacity,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn append(&mut self, v: bool) {
        match &mut self.bits {
            Some(bits) => bits.append(v),
            None if v => {}
            None => self.first_null(),
        }
        self.len += 1;
    }

    /// The bits for the rows so far (all valid), then a null.
    #[cold]
    #[inline(never)]
    fn first_null(&mut self) {
        let mut bits = BooleanBufferBuilder::new(self.capacity.max(self.len + 1));
        bits.append_n(self.len, true);
        bits.append(false);
        self.bits = Some(bits);
    }

    fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.len = len;
            if let Some(bits) = &mut self.bits {
                bits.truncate(len);
            }
        }
    }

    /// The null buffer, or `None` when no row is null.
    fn finish(self) -> Option<NullBuffer> {
        let mut bits = self.bits?;
        Some(NullBuffer::new(bits.finish())).filter(|n| n.null_count() > 0)
    }
}

/// A column being built, one per node of the plan.
enum Col<'p> {
    Bool {
        values: BooleanBufferBuilder,
        valid: Valid,
    },
    Int {
        values: Vec<i64>,
        valid: Valid,
        lo: i64,
        hi: i64,
        data_type: &'p DataType,
    },
    UInt {
        values: Vec<u64>,
        valid: Valid,
        hi: u64,
        data_type: &'p DataType,
    },
    Float32 {
        values: Vec<f32>,
        valid: Valid,
    },
    Float64 {
        values: Vec<f64>,
        valid: Valid,
    },
    Timestamp {
        values: Vec<i64>,
        valid: Valid,
        unit: TimeUnit,
        tz: &'p Tz,
        data_type: &'p DataType,
    },
    Text {
        offsets: Vec<i32>,
        bytes: Vec<u8>,
        valid: Valid,
    },
    Struct {
        plan: &'p StructPlan,
        children: Vec<Col<'p>>,
        valid: Valid,
        /// Which fields past the 64th the object being read has set (see [`Seen`]).
        seen: Vec<bool>,
    },
    List {
        field: &'p FieldRef,
        large: bool,
        offsets: Vec<i64>,
        item: Box<Col<'p>>,
        item_nullable: bool,
        valid: Valid,
    },
    Map {
        entries: &'p FieldRef,
        sorted: bool,
        offsets: Vec<i64>,
        keys: Box<Col<'p>>,
        values: Box<Col<'p>>,
        value_nullable: bool,
        valid: Valid,
    },
}

impl<'p> Col<'p> {
    /// A column for a piece of `rows` values, sized from `sizes`.
    fn new(node: &'p Node, rows: usize, sizes: &mut Sizes) -> Col<'p> {
        let valid = Valid::new(rows);
        let (items, text_bytes) = sizes.next(rows, rows * 16);
        match node {
            Node::Bool => Col::Bool {
                values: BooleanBufferBuilder::new(items),
                valid,
            },
            Node::Int { lo, hi, data_type } => Col::Int {
                values: memory::take_vec(items),
                valid,
                lo: *lo,
                hi: *hi,
                data_type,
            },
            Node::UInt { hi, data_type } => Col::UInt {
                values: Vec::with_capacity(items),
                valid,
                hi: *hi,
                data_type,
            },
            Node::Float32 => Col::Float32 {
                values: Vec::with_capacity(items),
                valid,
            },
            Node::Float64 => Col::Float64 {
                values: memory::take_vec(items),
                valid,
            },
            Node::Timestamp { unit, tz, data_type } => Col::Timestamp {
                values: memory::take_vec(items),
                valid,
                unit: *unit,
                tz,
                data_type,
            },
            Node::Text => {
                let mut offsets = memory::take_vec(items + 1);
                offsets.push(0);
                Col::Text {
                    offsets,
                    bytes: memory::take_vec(text_bytes),
                    valid,
                }
            }
            Node::Struct(plan) => Col::Struct {
                plan,
                children: plan.nodes.iter().map(|n| Col::new(n, rows, sizes)).collect(),
                valid,
                seen: vec![false; plan.nodes.len().saturating_sub(64)],
            },
            Node::List { field, item, large } => {
                let mut offsets = memory::take_vec(items + 1);
                offsets.push(0);
                Col::List {
                    field,
                    large: *large,
                    offsets,
                    item: Box::new(Col::new(item, rows, sizes)),
                    item_nullable: field.is_nullable(),
                    valid,
                }
            }
            Node::Map {
                entries,
                sorted,
                value,
                value_nullable,
            } => {
                let mut offsets = memory::take_vec(items + 1);
                offsets.push(0);
                Col::Map {
                    entries,
                    sorted: *sorted,
                    offsets,
                    keys: Box::new(Col::new(&Node::Text, rows, sizes)),
                    values: Box::new(Col::new(value, rows, sizes)),
                    value_nullable: *value_nullable,
                    valid,
                }
            }
        }
    }

    /// Keep this column's sizes, and those under it, in `sizes` (in the
    /// order [`Col::new`] reads them).
    fn learn(&self, sizes: &mut Sizes) {
        match self {
            Col::Bool { values, .. } => sizes.keep(values.len(), 0),
            Col::Int { values, .. } | Col::Timestamp { values, .. } => sizes.keep(values.len(), 0),
            Col::UInt { values, .. } => sizes.keep(values.len(), 0),
            Col::Float32 { values, .. } => sizes.keep(values.len(), 0),
            Col::Float64 { values, .. } => sizes.keep(values.len(), 0),
            Col::Text { offsets, bytes, .. } => sizes.keep(offsets.len(), bytes.len()),
            Col::Struct { children, valid, .. } => {
                sizes.keep(valid.len(), 0);
                children.iter().for_each(|c| c.learn(sizes));
            }
            Col::List { offsets, item, .. } => {
                sizes.keep(offsets.len(), 0);
                item.learn(sizes);
            }
            Col::Map {
                offsets, keys, values, ..
            } => {
                sizes.keep(offsets.len(), 0);
                keys.learn(sizes);
                values.learn(sizes);
            }
        }
    }

    fn valid(&mut self) -> &mut Valid {
        match self {
            Col::Bool { valid, .. }
            | Col::Int { valid, .. }
            | Col::UInt { valid, .. }
            | Col::Float32 { valid, .. }
            | Col::Float64 { valid, .. }
            | Col::Timestamp { valid, .. }
            | Col::Text { valid, .. }
            | Col::Struct { valid, .. }
            | Col::List { valid, .. }
            | Col::Map { valid, .. } => valid,
        }
    }

    /// Append a null (a struct's fields are null under it).
    fn push_null(&mut self) {
        match self {
            Col::Bool { values, .. } => values.append(false),
            Col::Int { values, .. } | Col::Timestamp { values, .. } => values.push(0),
            Col::UInt { values, .. } => values.push(0),
            Col::Float32 { values, .. } => values.push(0.0),
            Col::Float64 { values, .. } => values.push(0.0),
            Col::Text { offsets, bytes, .. } => offsets.push(text_end(bytes)),
            Col::Struct { children, .. } => children.iter_mut().for_each(Col::push_null),
            Col::List { offsets, .. } | Col::Map { offsets, .. } => {
                let last = offsets.last().copied().unwrap_or(0);
                offsets.push(last);
            }
        }
        self.valid().append(false);
    }

    /// Drop every row from `len` on, in this column and the ones under it.
    fn truncate(&mut self, len: usize) {
        match self {
            Col::Bool { values, .. } => values.truncate(len),
            Col::Int { values, .. } | Col::Timestamp { values, .. } => values.truncate(len),
            Col::UInt { values, .. } => values.truncate(len),
            Col::Float32 { values, .. } => values.truncate(len),
            Col::Float64 { values, .. } => values.truncate(len),
            Col::Text { offsets, bytes, .. } => {
                offsets.truncate(len + 1);
                bytes.truncate(offsets[len] as usize);
            }
            Col::Struct { children, .. } => children.iter_mut().for_each(|c| c.truncate(len)),
            Col::List { offsets, item, .. } => {
                offsets.truncate(len + 1);
                item.truncate(offsets[len] as usize);
            }
            Col::Map {
                offsets, keys, values, ..
            } => {
                offsets.truncate(len + 1);
                keys.truncate(offsets[len] as usize);
                values.truncate(offsets[len] as usize);
            }
        }
        self.valid().truncate(len);
    }

    /// The column as an Arrow array. Offsets (text, list and map) are
    /// wrapped unchecked, as Arrow's check is a pass over each of them: they
    /// start at 0 and never fall, as each value pushes its column's length
    /// or the last offset plus its item count, and [`Col::truncate`] cuts
    /// offsets and what they index together.
    fn finish(self) -> Result<ArrayRef, ArrowError> {
        fn nulls(valid: Valid) -> Option<NullBuffer> {
            valid.finish()
        }
        fn ints<T: arrow_array::ArrowPrimitiveType>(
            values: impl Iterator<Item = T::Native>,
            nulls: Option<NullBuffer>,
        ) -> ArrayRef {
            Arc::new(PrimitiveArray::<T>::new(values.collect(), nulls))
        }
        fn list_offsets(offsets: Vec<i64>) -> Result<OffsetBuffer<i32>, ArrowError> {
            let mut narrow = memory::take_vec::<i32>(offsets.len());
            for &o in &offsets {
                narrow.push(i32::try_from(o).map_err(|_| ArrowError::JsonError("list offsets overflow".into()))?);
            }
            memory::recycle(offsets);
            // SAFETY: rising from 0 (see `finish`); narrowing kept every value.
            Ok(unsafe { OffsetBuffer::new_unchecked(memory::into_scalars(narrow)) })
        }
        Ok(match self {
            Col::Bool { mut values, valid } => Arc::new(BooleanArray::new(values.finish(), nulls(valid))),
            Col::Int {
                values,
                valid,
                data_type,
                ..
            } => {
                let n = nulls(valid);
                // In range by construction (and 0 under a null).
                match data_type {
                    DataType::Int8 => ints::<Int8Type>(values.iter().map(|&v| v as i8), n),
                    DataType::Int16 => ints::<Int16Type>(values.iter().map(|&v| v as i16), n),
                    DataType::Int32 => ints::<Int32Type>(values.iter().map(|&v| v as i32), n),
                    _ => Arc::new(PrimitiveArray::<Int64Type>::new(memory::into_scalars(values), n)),
                }
            }
            Col::UInt {
                values,
                valid,
                data_type,
                ..
            } => {
                let n = nulls(valid);
                match data_type {
                    DataType::UInt8 => ints::<UInt8Type>(values.iter().map(|&v| v as u8), n),
                    DataType::UInt16 => ints::<UInt16Type>(values.iter().map(|&v| v as u16), n),
                    DataType::UInt32 => ints::<UInt32Type>(values.iter().map(|&v| v as u32), n),
                    _ => Arc::new(PrimitiveArray::<UInt64Type>::new(values.into(), n)),
                }
            }
            Col::Float32 { values, valid } => Arc::new(PrimitiveArray::<Float32Type>::new(values.into(), nulls(valid))),
            Col::Float64 { values, valid } => Arc::new(PrimitiveArray::<Float64Type>::new(
                memory::into_scalars(values),
                nulls(valid),
            )),
            Col::Timestamp {
                values,
                valid,
                unit,
                data_type,
                ..
            } => {
                let DataType::Timestamp(_, tz) = data_type else {
                    unreachable!("a timestamp column of a timestamp type")
                };
                let (values, n) = (memory::into_scalars(values), nulls(valid));
                match unit {
                    TimeUnit::Second => {
                        Arc::new(PrimitiveArray::<TimestampSecondType>::new(values, n).with_timezone_opt(tz.clone()))
                    }
                    TimeUnit::Millisecond => Arc::new(
                        PrimitiveArray::<TimestampMillisecondType>::new(values, n).with_timezone_opt(tz.clone()),
                    ),
                    TimeUnit::Microsecond => Arc::new(
                        PrimitiveArray::<TimestampMicrosecondType>::new(values, n).with_timezone_opt(tz.clone()),
                    ),
                    TimeUnit::Nanosecond => Arc::new(
                        PrimitiveArray::<TimestampNanosecondType>::new(values, n).with_timezone_opt(tz.clone()),
                    ),
                }
            }
            Col::Text { offsets, bytes, valid } => {
                if i32::try_from(bytes.len()).is_err() {
                    return Err(ArrowError::JsonError(
                        "more than 2 GiB of strings in one column of a piece".into(),
                    ));
                }
                // SAFETY: rising from 0 (see `finish`); the bytes' length
                // fits `i32`, so no offset wrapped.
                let offsets = unsafe { OffsetBuffer::new_unchecked(memory::into_scalars(offsets)) };
                debug_assert!(std::str::from_utf8(&bytes).is_ok());
                // SAFETY: the bytes are copied from documents' strings only
                // after checking them as UTF-8 (`Parser::string`), or are
                // whole characters written from escapes and literals, and the
                // offsets, rising from 0, fall on those copies' boundaries.
                Arc::new(unsafe { StringArray::new_unchecked(offsets, memory::into_buffer(bytes), nulls(valid)) })
            }
            Col::Struct {
                plan, children, valid, ..
            } => {
                let len = valid.len();
                let children = children.into_iter().map(Col::finish).collect::<Result<Vec<_>, _>>()?;
                Arc::new(StructArray::try_new_with_length(
                    plan.fields.clone(),
                    children,
                    nulls(valid),
                    len,
                )?)
            }
            Col::List {
                field,
                large,
                offsets,
                item,
                valid,
                ..
            } => {
                let item = item.finish()?;
                if large {
                    // SAFETY: rising from 0 (see `finish`).
                    let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
                    Arc::new(LargeListArray::try_new(field.clone(), offsets, item, nulls(valid))?)
                } else {
                    Arc::new(ListArray::try_new(
                        field.clone(),
                        list_offsets(offsets)?,
                        item,
                        nulls(valid),
                    )?)
                }
            }
            Col::Map {
                entries,
                sorted,
                offsets,
                keys,
                values,
                valid,
                ..
            } => {
                let DataType::Struct(kv) = entries.data_type() else {
                    unreachable!("a map's entries are a struct")
                };
                let (keys, values) = (keys.finish()?, values.finish()?);
                let len = keys.len();
                let entries_array = StructArray::try_new_with_length(kv.clone(), vec![keys, values], None, len)?;
                Arc::new(MapArray::try_new(
                    entries.clone(),
                    list_offsets(offsets)?,
                    entries_array,
                    nulls(valid),
                    sorted,
                )?)
            }
        })
    }
}

/// Why a value was not read.
enum Failure {
    /// Not JSON: what was expected, and at which byte.
    Syntax(&'static str, usize),
    /// JSON that does not fit the type (Spark's from_json reads it as null).
    Fit(String),
    /// Nested deeper than Jackson allows, at this byte.
    Depth(usize),
    /// Valid, but arrow-json must read the piece (a repeated field name).
    Fallback,
    /// Said as is.
    Plain(String),
}

impl Failure {
    fn in_field(self: Box<Self>, name: &str) -> Box<Failure> {
        match *self {
            Failure::Fit(why) => Box::new(Failure::Fit(format!("field '{name}': {why}"))),
            _ => self,
        }
    }

    /// The row's error, or `None` to hand the piece to arrow-json.
    fn reason(self) -> Option<String> {
        Some(match self {
            Failure::Syntax(what, at) => format!("malformed JSON: {what} at byte {at}"),
            Failure::Fit(why) => format!("JSON value does not fit the schema: {why}"),
            Failure::Depth(at) => format!(
                "JSON nested deeper than {MAX_NESTING_DEPTH} levels at byte {at} (Spark's from_json reads it as null)"
            ),
            Failure::Plain(why) => why,
            Failure::Fallback => return None,
        })
    }
}

type Parsed<T = ()> = Result<T, Box<Failure>>;

/// A syntax error (out of line: the paths that read good values stay short).
#[cold]
#[inline(never)]
fn syntax<T>(what: &'static str, at: usize) -> Parsed<T> {
    Err(Box::new(Failure::Syntax(what, at)))
}

/// The offset after a text column's latest value: `bytes`' length. It may
/// wrap past 2 GiB: [`Col::finish`] then refuses the column (arrow-json
/// reads the piece), so no per-value check is needed.
#[inline(always)]
fn text_end(bytes: &[u8]) -> i32 {
    bytes.len() as i32
}

/// What a JSON token starting with `b` is, for messages.
fn token_name(b: u8) -> &'static str {
    match b {
        b'{' => "an object",
        b'[' => "an array",
        b'"' => "a string",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        _ => "a number",
    }
}

/// Bytes that stop a string scan: `"`, `\` and control characters (and, in
/// the table, bytes of 0x80 and up, which the caller checks as UTF-8).
static STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i < 0x20 || i == b'"' as usize || i == b'\\' as usize || i >= 0x80;
        i += 1;
    }
    t
};

/// The index of the first byte from `i` on that is `"`, `\`, a control
/// character or (when `high`) 0x80 and up; `b.len()` if none is.
#[inline(always)]
fn find_stop(b: &[u8], mut i: usize, high: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of every x86-64 CPU (the target's baseline);
        // each load reads 16 bytes at `i` only while `i + 16 <= b.len()`.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let control = _mm_set1_epi8(0x1f);
            while i + 16 <= b.len() {
                let x = _mm_loadu_si128(b.as_ptr().add(i).cast::<__m128i>());
                let stops = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                    // x <= 0x1f, unsigned
                    _mm_cmpeq_epi8(_mm_max_epu8(x, control), control),
                );
                let mut mask = _mm_movemask_epi8(stops);
                if high {
                    mask |= _mm_movemask_epi8(x);
                }
                if mask != 0 {
                    return i + mask.trailing_zeros() as usize;
                }
                i += 16;
            }
        }
    }
    while i < b.len() {
        let c = b[i];
        if STOP[c as usize] && (high || c < 0x80) {
            return i;
        }
        i += 1;
    }
    i
}

/// The longest string run copied as one fixed-size move (see [`append_run`]).
const SHORT_RUN: usize = 32;

/// Append `b[from..to]` to `out`. A run of up to [`SHORT_RUN`] bytes with
/// that many bytes of `b` from `from` is copied as one fixed-size move (no
/// `memcpy` call for the short strings most values hold); longer runs are
/// copied as usual.
#[inline(always)]
fn append_run(out: &mut Vec<u8>, b: &[u8], from: usize, to: usize) {
    let n = to - from;
    if n <= SHORT_RUN && from + SHORT_RUN <= b.len() {
        out.reserve(SHORT_RUN);
        // SAFETY: `from + SHORT_RUN <= b.len()`, so the bytes read are in
        // `b`; `reserve(SHORT_RUN)` leaves room for that many bytes after
        // `out.len()`, so the bytes written are in `out`'s allocation; `out`
        // (borrowed mutably) and `b` (shared) can't overlap. The first
        // `n <= SHORT_RUN` of them are `b[from..to]`, and only those become
        // part of `out` (the rest is spare capacity).
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr().add(from), out.as_mut_ptr().add(out.len()), SHORT_RUN);
            out.set_len(out.len() + n);
        }
    } else {
        out.extend_from_slice(&b[from..to]);
    }
}

/// Powers of ten that `f64` holds exactly.
static EXACT_POWERS: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The number at `b[start..]` when it has no exponent and at most 15
/// digits, read in one pass, as the nearest `f64`, and where it ends; `None`
/// for any other text, valid or not (`Parser::number` then reads it).
/// Clinger's fast path: the digits as an integer (below 10^15 < 2^53) and
/// the power of ten are both exact in `f64`, so one correctly rounded
/// division gives the correctly rounded value, as `str::parse` does.
///
/// With 16 bytes from the first digit in `b` (most numbers of a document),
/// the digit runs are found by one 16-byte compare and read 8 digits at a
/// time ([`eight_digits`]), without a branch per digit.
#[inline(always)]
fn short_decimal(b: &[u8], start: usize) -> Option<(f64, usize)> {
    let negative = b.get(start) == Some(&b'-');
    let first = start + usize::from(negative);
    if let Some(chunk) = b.get(first..first + 16).and_then(|c| c.first_chunk::<16>()) {
        // A stop at every byte past the chunk: runs that reach it are read below.
        let stops = non_digits(chunk) | !0xFFFF;
        let whole = stops.trailing_zeros() as usize;
        // RFC 8259: one or more digits, no leading zero.
        if whole == 0 || (whole > 1 && chunk[0] == b'0') {
            return None;
        }
        if whole <= 8 {
            let word = |at: usize| b.get(first + at..first + at + 8).and_then(|w| w.first_chunk::<8>());
            let mut m = eight_digits(u64::from_le_bytes(*word(0)?), whole);
            let (mut end, mut fraction) = (whole, 0);
            if chunk[whole] == b'.' {
                fraction = (stops >> (whole + 1)).trailing_zeros() as usize;
                end = whole + 1 + fraction;
                match word(whole + 1) {
                    Some(w) if fraction > 0 && fraction <= 8 && end < 16 => {
                        m = m * EXACT_INTEGER_POWERS[fraction] + eight_digits(u64::from_le_bytes(*w), fraction);
                    }
                    _ => return short_decimal_bytewise(b, start),
                }
            }
            if whole + fraction > 15 || matches!(chunk[end], b'e' | b'E') {
                return None;
            }
            let v = m as f64 / EXACT_POWERS[fraction];
            return Some((if negative { -v } else { v }, first + end));
        }
    }
    short_decimal_bytewise(b, start)
}

/// Powers of ten up to 10^8, as integers.
static EXACT_INTEGER_POWERS: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

/// Bit `k` set where `chunk[k]` is not an ASCII digit.
#[inline(always)]
fn non_digits(chunk: &[u8; 16]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_set1_epi8, _mm_sub_epi8,
        };
        // SAFETY: SSE2 is part of every x86-64 CPU; the load reads `chunk`'s 16 bytes.
        unsafe {
            let x = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            let d = _mm_sub_epi8(x, _mm_set1_epi8(b'0' as i8));
            // A digit's `d` is at most 9 (unsigned).
            let digits = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d);
            !(_mm_movemask_epi8(digits) as u32) & 0xFFFF
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0..16)
            .filter(|&k| !chunk[k].is_ascii_digit())
            .fold(0, |m, k| m | 1 << k)
    }
}

/// The number written by the first `n <= 8` bytes of `word` (little-endian),
/// ASCII digits: the eight-digit multiply-and-add of simdjson's
/// `parse_eight_digits_unrolled`, with `8 - n` leading zeros put first.
#[inline(always)]
fn eight_digits(word: u64, n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    // Bytes past the digits may borrow, but only from bytes above them,
    // which the shift drops.
    let v = word.wrapping_sub(0x3030_3030_3030_3030) << (8 * (8 - n));
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let low = (v & 0x0000_00FF_0000_00FF).wrapping_mul(100 + (1_000_000 << 32));
    let high = ((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32));
    low.wrapping_add(high) >> 32
}

/// [`short_decimal`] a byte at a time, for numbers near the end of `b` or
/// with more than 8 digits before the point.
fn short_decimal_bytewise(b: &[u8], start: usize) -> Option<(f64, usize)> {
    let digit = |i: usize| b.get(i).map_or(10, |c| c.wrapping_sub(b'0'));
    let negative = b.get(start) == Some(&b'-');
    let first = start + usize::from(negative);
    let (mut m, mut i) = (0u64, first);
    let mut d = digit(i);
    while d < 10 {
        m = m.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
        d = digit(i);
    }
    let whole = i - first;
    // RFC 8259: one or more digits, no leading zero.
    if whole == 0 || (whole > 1 && b[first] == b'0') {
        return None;
    }
    let mut fraction = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let from = i;
        d = digit(i);
        while d < 10 {
            m = m.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
            d = digit(i);
        }
        fraction = i - from;
        if fraction == 0 {
            return None;
        }
    }
    if whole + fraction > 15 || matches!(b.get(i), Some(b'e' | b'E')) {
        return None;
    }
    let v = m as f64 / EXACT_POWERS[fraction];
    Some((if negative { -v } else { v }, i))
}

/// The non-negative integer of at most 18 digits at `b[start..]` (a digit),
/// and where it ends; `None` for any other text (a fraction, an exponent, a
/// leading zero, more digits), which `Parser::integer` then reads.
#[inline(always)]
fn short_integer(b: &[u8], start: usize) -> Option<(i64, usize)> {
    let (mut v, mut i) = (0i64, start);
    while let Some(d) = b.get(i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d < 10) {
        if i - start == 18 {
            return None;
        }
        v = v * 10 + i64::from(d);
        i += 1;
    }
    let leading_zero = i - start > 1 && b[start] == b'0';
    if i == start || leading_zero || matches!(b.get(i), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    Some((v, i))
}

/// The fields an object has set so far: a bit per field for the first 64
/// (kept in a register), a flag per field in `rest` for the others.
struct Seen<'r> {
    low: u64,
    rest: &'r mut [bool],
}

impl<'r> Seen<'r> {
    /// None seen; `rest` holds a flag per field from the 65th on.
    #[inline(always)]
    fn new(rest: &'r mut [bool]) -> Seen<'r> {
        rest.fill(false);
        Seen { low: 0, rest }
    }

    /// Mark field `k`; `false` if it was already.
    #[inline(always)]
    fn insert(&mut self, k: usize) -> bool {
        if k < 64 {
            let bit = 1u64 << k;
            let new = self.low & bit == 0;
            self.low |= bit;
            new
        } else {
            !std::mem::replace(&mut self.rest[k - 64], true)
        }
    }

    fn contains(&self, k: usize) -> bool {
        if k < 64 {
            self.low >> k & 1 == 1
        } else {
            self.rest[k - 64]
        }
    }
}

struct Parser<'a, 's> {
    b: &'a [u8],
    i: usize,
    depth: usize,
    /// Room for a field name with escapes.
    scratch: &'s mut Vec<u8>,
}

impl<'a, 's> Parser<'a, 's> {
    /// A parser at the start of `b`, with `scratch` as room for names with escapes.
    fn new(b: &'a [u8], scratch: &'s mut Vec<u8>) -> Parser<'a, 's> {
        Parser {
            b,
            i: 0,
            depth: 0,
            scratch,
        }
    }

    /// One whole value, into `root`.
    fn document(&mut self, root: &mut Col) -> Parsed {
        self.whole(|p| p.value(root, true))
    }

    /// One whole value, read by `read`: nothing but whitespace around it.
    fn whole(&mut self, read: impl FnOnce(&mut Self) -> Parsed) -> Parsed {
        self.ws();
        if self.i == self.b.len() {
            return Err(Box::new(Failure::Plain("empty value: no JSON document".into())));
        }
        read(self)?;
        self.ws();
        match self.b.get(self.i) {
            None => Ok(()),
            Some(b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => Err(Box::new(Failure::Plain(
                "more than one JSON document in the value".into(),
            ))),
            Some(_) => syntax("the end of the document", self.i),
        }
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if c > b' ' || !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                return;
            }
            self.i += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    #[inline(always)]
    fn peek(&mut self) -> Parsed<u8> {
        // Compact documents: the next byte is the token.
        match self.b.get(self.i) {
            Some(&c) if c > b' ' => Ok(c),
            _ => self.peek_past_space(),
        }
    }

    /// [`Parser::peek`] where one space often comes first: after `": "`
    /// and `", "`, as `json.dumps` and many writers put them.
    #[inline(always)]
    fn peek_spaced(&mut self) -> Parsed<u8> {
        match self.b.get(self.i) {
            Some(&c) if c > b' ' => Ok(c),
            Some(b' ') => match self.b.get(self.i + 1) {
                Some(&c) if c > b' ' => {
                    self.i += 1;
                    Ok(c)
                }
                _ => self.peek_past_space(),
            },
            _ => self.peek_past_space(),
        }
    }

    #[inline(never)]
    fn peek_past_space(&mut self) -> Parsed<u8> {
        self.ws();
        match self.b.get(self.i) {
            Some(&c) => Ok(c),
            None => syntax("a value, not the end", self.i),
        }
    }

    fn enter(&mut self) -> Parsed {
        self.depth += 1;
        if self.depth > MAX_NESTING_DEPTH {
            return Err(Box::new(Failure::Depth(self.i)));
        }
        Ok(())
    }

    fn literal(&mut self, word: &'static [u8]) -> Parsed {
        if self.b.get(self.i..self.i + word.len()) == Some(word) {
            self.i += word.len();
            Ok(())
        } else {
            syntax("true, false or null", self.i)
        }
    }

    /// The items of an array or the members of an object (`close` is `]` or
    /// `}`) at `self.i`, its opening byte, each read by `one`; how many.
    #[inline]
    fn items(&mut self, close: u8, mut one: impl FnMut(&mut Self) -> Parsed) -> Parsed<i64> {
        self.enter()?;
        self.i += 1;
        let mut n = 0;
        if self.peek()? == close {
            self.i += 1;
        } else {
            loop {
                one(self)?;
                n += 1;
                if !self.more(close)? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Ok(n)
    }

    /// After a member or item: `true` if another follows (`,` consumed),
    /// `false` at the closing `close` (consumed).
    #[inline(always)]
    fn more(&mut self, close: u8) -> Parsed<bool> {
        match self.peek()? {
            b',' => {
                self.i += 1;
                Ok(true)
            }
            c if c == close => {
                self.i += 1;
                Ok(false)
            }
            _ => syntax(if close == b'}' { "',' or '}'" } else { "',' or ']'" }, self.i),
        }
    }

    /// A number's text from `self.i` (RFC 8259's grammar), and whether it is
    /// an integer (no fraction, no exponent).
    #[inline]
    fn number(&mut self) -> Parsed<(&'a [u8], bool)> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                i += 1;
                while digit(i) {
                    i += 1;
                }
            }
            _ => return syntax("a digit", i),
        }
        let mut integer = true;
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digit(i) {
                return syntax("a digit after '.'", i);
            }
            while digit(i) {
                i += 1;
            }
            integer = false;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !digit(i) {
                return syntax("a digit in the exponent", i);
            }
            while digit(i) {
                i += 1;
            }
            integer = false;
        }
        self.i = i;
        Ok((&b[start..i], integer))
    }

    /// The string at `self.i` (an opening quote), decoded and appended to
    /// `out`: runs without escapes copied once, escapes decoded.
    #[inline(always)]
    fn string(&mut self, out: &mut Vec<u8>) -> Parsed {
        // Most strings are ASCII without escapes: one scan, one copy.
        let b = self.b;
        let j = find_stop(b, self.i + 1, true);
        if b.get(j) == Some(&b'"') {
            append_run(out, b, self.i + 1, j);
            self.i = j + 1;
            return Ok(());
        }
        self.escaped_string(out)
    }

    /// [`Parser::string`] for strings with escapes, non-ASCII bytes or errors.
    #[inline(never)]
    fn escaped_string(&mut self, out: &mut Vec<u8>) -> Parsed {
        let b = self.b;
        let mut i = self.i + 1;
        let mut high = true;
        let mut run = i;
        loop {
            let j = find_stop(b, i, high);
            match b.get(j) {
                None => return syntax("the end of a string", j),
                Some(b'"') => {
                    append_run(out, b, run, j);
                    if !high {
                        self.check_utf8(run, j)?;
                    }
                    self.i = j + 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    append_run(out, b, run, j);
                    if !high {
                        self.check_utf8(run, j)?;
                        high = true;
                    }
                    let c = self.escape(j)?;
                    i = self.i;
                    run = i;
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                Some(&c) if c >= 0x80 => {
                    // Non-ASCII: checked as UTF-8 with the rest of the run.
                    high = false;
                    i = j + 1;
                }
                Some(_) => return syntax("a control character escaped in a string", j),
            }
        }
    }

    fn check_utf8(&self, from: usize, to: usize) -> Parsed {
        std::str::from_utf8(&self.b[from..to])
            .map(drop)
            .map_err(|e| Box::new(Failure::Syntax("UTF-8", from + e.valid_up_to())))
    }

    /// The escape at `at` (a backslash), decoded; `self.i` moves past it.
    fn escape(&mut self, at: usize) -> Parsed<char> {
        let b = self.b;
        let hex = |i: usize| -> Parsed<u32> {
            let digits = b.get(i..i + 4).ok_or(Failure::Syntax("4 hex digits", i))?;
            digits.iter().try_fold(0u32, |v, &d| {
                let d = (d as char).to_digit(16).ok_or(Failure::Syntax("4 hex digits", i))?;
                Ok(v << 4 | d)
            })
        };
        let (c, len) = match b.get(at + 1) {
            Some(b'"') => ('"', 2),
            Some(b'\\') => ('\\', 2),
            Some(b'/') => ('/', 2),
            Some(b'b') => ('\u{8}', 2),
            Some(b'f') => ('\u{c}', 2),
            Some(b'n') => ('\n', 2),
            Some(b'r') => ('\r', 2),
            Some(b't') => ('\t', 2),
            Some(b'u') => {
                let high = hex(at + 2)?;
                match high {
                    0xD800..=0xDBFF => {
                        if b.get(at + 6..at + 8) != Some(b"\\u") {
                            return syntax("the low half of a surrogate pair", at + 6);
                        }
                        let low = hex(at + 8)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return syntax("the low half of a surrogate pair", at + 6);
                        }
                        let c = char::from_u32(0x1_0000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                            .ok_or(Failure::Syntax("a character", at))?;
                        (c, 12)
                    }
                    0xDC00..=0xDFFF => return syntax("a high surrogate before the low one", at),
                    _ => (char::from_u32(high).ok_or(Failure::Syntax("a character", at))?, 6),
                }
            }
            _ => return syntax("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)", at),
        };
        self.i = at + len;
        Ok(c)
    }

    /// The field name at `self.i` (an opening quote), as bytes: a slice of
    /// the document, or decoded into the scratch room when it has escapes.
    #[inline]
    fn key(&mut self) -> Parsed<KeyAt> {
        let b = self.b;
        let start = self.i + 1;
        let j = find_stop(b, start, true);
        if b.get(j) == Some(&b'"') {
            self.i = j + 1;
            return Ok(KeyAt::Doc(start, j));
        }
        let mut scratch = std::mem::take(self.scratch);
        scratch.clear();
        let result = self.escaped_string(&mut scratch);
        *self.scratch = scratch;
        result.map(|()| KeyAt::Scratch)
    }

    /// Any value, checked and passed over (a field the schema doesn't name).
    fn skip(&mut self) -> Parsed {
        self.walk(None)
    }

    /// Any value as compact JSON text (Jackson's `copyCurrentStructure`):
    /// no whitespace, strings re-escaped as `spark_json::write_json_string` does.
    fn render(&mut self, out: &mut Vec<u8>) -> Parsed {
        self.walk(Some(out))
    }

    /// Any value, checked, and written compact to `out` if given. Nesting is
    /// followed without recursion (a bit per level says object or array), so
    /// depth costs no stack.
    fn walk(&mut self, mut out: Option<&mut Vec<u8>>) -> Parsed {
        let base = self.depth;
        let mut objects = [0u64; MAX_NESTING_DEPTH.div_ceil(64) + 1];
        'value: loop {
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.enter()?;
                    self.i += 1;
                    let object = open == b'{';
                    let bit = 1u64 << (self.depth % 64);
                    if object {
                        objects[self.depth / 64] |= bit;
                    } else {
                        objects[self.depth / 64] &= !bit;
                    }
                    if let Some(out) = out.as_deref_mut() {
                        out.push(open);
                    }
                    let close = if object { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.i += 1;
                        if let Some(out) = out.as_deref_mut() {
                            out.push(close);
                        }
                        self.depth -= 1;
                    } else {
                        if object {
                            self.member_name(out.as_deref_mut())?;
                        }
                        continue 'value;
                    }
                }
                b'"' => match out.as_deref_mut() {
                    Some(out) => self.render_string(out)?,
                    None => self.skip_string()?,
                },
                b't' => self.word(b"true", out.as_deref_mut())?,
                b'f' => self.word(b"false", out.as_deref_mut())?,
                b'n' => self.word(b"null", out.as_deref_mut())?,
                _ => {
                    let (text, _) = self.number()?;
                    if let Some(out) = out.as_deref_mut() {
                        out.extend_from_slice(text);
                    }
                }
            }
            // A value ended: close the containers it ends, until one goes on.
            loop {
                if self.depth == base {
                    return Ok(());
                }
                let object = objects[self.depth / 64] & (1u64 << (self.depth % 64)) != 0;
                let close = if object { b'}' } else { b']' };
                if self.more(close)? {
                    if let Some(out) = out.as_deref_mut() {
                        out.push(b',');
                    }
                    if object {
                        self.member_name(out.as_deref_mut())?;
                    }
                    continue 'value;
                }
                if let Some(out) = out.as_deref_mut() {
                    out.push(close);
                }
                self.depth -= 1;
            }
        }
    }

    /// A member's name and its colon, written to `out` if given.
    fn member_name(&mut self, out: Option<&mut Vec<u8>>) -> Parsed {
        if self.peek()? != b'"' {
            return syntax("a field name", self.i);
        }
        match out {
            Some(out) => {
                self.render_string(out)?;
                self.colon()?;
                out.push(b':');
            }
            None => {
                self.key()?;
                self.colon()?;
            }
        }
        Ok(())
    }

    fn word(&mut self, word: &'static [u8], out: Option<&mut Vec<u8>>) -> Parsed {
        self.literal(word)?;
        if let Some(out) = out {
            out.extend_from_slice(word);
        }
        Ok(())
    }

    fn skip_string(&mut self) -> Parsed {
        self.key().map(drop)
    }

    #[inline]
    fn colon(&mut self) -> Parsed {
        if self.peek()? != b':' {
            return syntax("':'", self.i);
        }
        self.i += 1;
        Ok(())
    }

    /// A string as a JSON literal: copied whole when it has no escapes
    /// (nothing in it then needs one), else decoded and escaped again.
    fn render_string(&mut self, out: &mut Vec<u8>) -> Parsed {
        let start = self.i;
        let j = find_stop(self.b, start + 1, true);
        if self.b.get(j) == Some(&b'"') {
            out.extend_from_slice(&self.b[start..=j]);
            self.i = j + 1;
            return Ok(());
        }
        let mut text = std::mem::take(self.scratch);
        text.clear();
        let result = self.escaped_string(&mut text);
        if result.is_ok() {
            // Valid UTF-8: checked or decoded by `string`.
            let text = String::from_utf8_lossy(&text);
            let mut escaped = String::with_capacity(text.len() + 2);
            super::spark_json::write_json_string(&text, &mut escaped);
            out.extend_from_slice(escaped.as_bytes());
        }
        *self.scratch = text;
        result
    }

    /// One value into `col`; a null only where `nullable`.
    fn value(&mut self, col: &mut Col, nullable: bool) -> Parsed {
        let c = self.peek()?;
        if !matches!(c, b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n') {
            return syntax("a value", self.i);
        }
        if c == b'n' {
            self.literal(b"null")?;
            if !nullable {
                return Err(Box::new(Failure::Fit("null for a non-nullable field".into())));
            }
            col.push_null();
            return Ok(());
        }
        let mismatch = |what: &str| Box::new(Failure::Fit(format!("expected {what}, found {}", token_name(c))));
        match col {
            Col::Struct {
                plan,
                children,
                valid,
                seen,
            } => {
                if c != b'{' {
                    return Err(mismatch("an object"));
                }
                self.object(plan, children, seen)?;
                valid.append(true);
            }
            Col::List {
                offsets,
                item,
                item_nullable,
                valid,
                ..
            } => {
                if c != b'[' {
                    return Err(mismatch("an array"));
                }
                let n = self.items(b']', |p| p.value(item, *item_nullable))?;
                offsets.push(offsets.last().copied().unwrap_or(0) + n);
                valid.append(true);
            }
            Col::Map {
                offsets,
                keys,
                values,
                value_nullable,
                valid,
                ..
            } => {
                if c != b'{' {
                    return Err(mismatch("an object"));
                }
                let n = self.items(b'}', |p| {
                    if p.peek()? != b'"' {
                        return syntax("a field name", p.i);
                    }
                    p.value(keys, false)?;
                    p.colon()?;
                    p.value(values, *value_nullable)
                })?;
                offsets.push(offsets.last().copied().unwrap_or(0) + n);
                valid.append(true);
            }
            Col::Text { offsets, bytes, valid } => {
                match c {
                    b'"' => self.string(bytes)?,
                    b'{' | b'[' => self.render(bytes)?,
                    b't' => {
                        self.literal(b"true")?;
                        bytes.extend_from_slice(b"true");
                    }
                    b'f' => {
                        self.literal(b"false")?;
                        bytes.extend_from_slice(b"false");
                    }
                    _ => bytes.extend_from_slice(self.number()?.0),
                }
                offsets.push(text_end(bytes));
                valid.append(true);
            }
            Col::Bool { values, valid } => {
                match c {
                    b't' => {
                        self.literal(b"true")?;
                        values.append(true);
                    }
                    b'f' => {
                        self.literal(b"false")?;
                        values.append(false);
                    }
                    _ => return Err(mismatch("a boolean")),
                }
                valid.append(true);
            }
            Col::Int {
                values, valid, lo, hi, ..
            } => {
                values.push(self.int64(c, *lo, *hi)?);
                valid.append(true);
            }
            Col::UInt { values, valid, hi, .. } => {
                let v = self.integer(c, 0, *hi as i128)?;
                values.push(v as u64);
                valid.append(true);
            }
            Col::Float32 { values, valid } => {
                values.push(self.float(c, true)? as f32);
                valid.append(true);
            }
            Col::Float64 { values, valid } => {
                values.push(self.double(c)?);
                valid.append(true);
            }
            Col::Timestamp {
                values,
                valid,
                unit,
                tz,
                data_type,
            } => {
                values.push(self.timestamp(c, *unit, tz, data_type)?);
                valid.append(true);
            }
        }
        Ok(())
    }

    /// An `Int` column's value (`c` its first byte) in `lo..=hi`: a short
    /// integer in one pass, anything else as [`Parser::integer`] reads it.
    #[inline(always)]
    fn int64(&mut self, c: u8, lo: i64, hi: i64) -> Parsed<i64> {
        match short_integer(self.b, self.i) {
            Some((v, end)) if (lo..=hi).contains(&v) => {
                self.i = end;
                Ok(v)
            }
            _ => Ok(self.integer(c, lo.into(), hi.into())? as i64),
        }
    }

    /// A `Float64` column's value (`c` its first byte): a short decimal in
    /// one pass, anything else as [`Parser::float`] reads it.
    #[inline(always)]
    fn double(&mut self, c: u8) -> Parsed<f64> {
        match short_decimal(self.b, self.i) {
            Some((v, end)) => {
                self.i = end;
                Ok(v)
            }
            None => self.float(c, false),
        }
    }

    /// One value into `col`, as [`Parser::value`] reads it, with the leaves
    /// most documents are made of (strings into text, numbers into doubles
    /// and integers) read here, without a call.
    #[inline(always)]
    fn member(&mut self, col: &mut Col, nullable: bool) -> Parsed {
        let c = self.peek_spaced()?;
        match (col, c) {
            (Col::Text { offsets, bytes, valid }, b'"') => {
                self.string(bytes)?;
                offsets.push(text_end(bytes));
                valid.append(true);
                Ok(())
            }
            (Col::Float64 { values, valid }, b'-' | b'0'..=b'9') => {
                values.push(self.double(c)?);
                valid.append(true);
                Ok(())
            }
            (
                Col::Int {
                    values, valid, lo, hi, ..
                },
                b'0'..=b'9',
            ) => {
                values.push(self.int64(c, *lo, *hi)?);
                valid.append(true);
                Ok(())
            }
            (col, _) => self.value(col, nullable),
        }
    }

    /// An object into a struct's fields, matched by name; fields it lacks are null.
    fn object(&mut self, plan: &StructPlan, children: &mut [Col], rest: &mut [bool]) -> Parsed {
        self.enter()?;
        self.i += 1;
        let mut seen = Seen::new(rest);
        let mut matched = 0;
        let mut expect = 0;
        // The field whose `,"name":` was matched after the last member.
        let mut next = None;
        if self.peek()? == b'}' {
            self.i += 1;
        } else {
            loop {
                let field = match (next.take(), plan.tokens.get(expect)) {
                    (Some(k), _) => Some(k),
                    _ if self.peek_spaced()? != b'"' => return syntax("a field name", self.i),
                    (None, Some(token)) if token.at(self.b, self.i) => {
                        self.i += token.len;
                        Some(expect)
                    }
                    _ => {
                        let b = self.b;
                        let (key, head): (&[u8], Head) = match self.key()? {
                            KeyAt::Doc(from, to) => (&b[from..to], Head::at(b, from, to)),
                            KeyAt::Scratch => (&self.scratch[..], Head::of(self.scratch)),
                        };
                        let field = plan.lookup(key, head, expect);
                        self.colon()?;
                        field
                    }
                };
                match field {
                    Some(k) => {
                        if !seen.insert(k) {
                            return Err(Box::new(Failure::Fallback));
                        }
                        matched += 1;
                        if let Err(e) = self.member(&mut children[k], plan.nullable[k]) {
                            return Err(e.in_field(plan.fields[k].name()));
                        }
                        expect = k + 1;
                    }
                    None => self.skip()?,
                }
                // Compact documents: the comma and the next field's name,
                // as producers write them, in one compare.
                if let Some(token) = plan.next_tokens.get(expect) {
                    if token.at(self.b, self.i) {
                        self.i += token.len;
                        next = Some(expect);
                        continue;
                    }
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        if matched < children.len() {
            for (k, child) in children.iter_mut().enumerate() {
                if !seen.contains(k) {
                    if !plan.nullable[k] {
                        return Err(Box::new(Failure::Fit(format!(
                            "field '{}' is missing and not nullable",
                            plan.fields[k].name()
                        ))));
                    }
                    child.push_null();
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// An integer literal in `lo..=hi`: `1.5`, `1e2` and strings are not
    /// integers in Spark's from_json.
    #[inline]
    fn integer(&mut self, c: u8, lo: i128, hi: i128) -> Parsed<i128> {
        if !(c == b'-' || c.is_ascii_digit()) {
            if c == b'"' {
                let mut text = Vec::new();
                self.escaped_string(&mut text)?;
                return Err(Box::new(Failure::Fit(format!(
                    "string {:?} for an integer field (Spark's from_json reads it as null)",
                    String::from_utf8_lossy(&text)
                ))));
            }
            return Err(Box::new(Failure::Fit(format!(
                "expected an integer, found {}",
                token_name(c)
            ))));
        }
        let (text, integer) = self.number()?;
        let shown = || String::from_utf8_lossy(text).into_owned();
        if !integer {
            return Err(Box::new(Failure::Fit(format!(
                "{} is not an integer (Spark's from_json reads it as null)",
                shown()
            ))));
        }
        let (negative, digits) = match text {
            [b'-', rest @ ..] => (true, rest),
            _ => (false, text),
        };
        let mut v: u64 = 0;
        let mut exact = digits.len() <= 20;
        if exact {
            for &d in digits {
                match v.checked_mul(10).and_then(|v| v.checked_add(u64::from(d - b'0'))) {
                    Some(n) => v = n,
                    None => {
                        exact = false;
                        break;
                    }
                }
            }
        }
        if exact {
            let v = if negative { -(v as i128) } else { v as i128 };
            if (lo..=hi).contains(&v) {
                return Ok(v);
            }
        }
        // arrow-json reads an integer its type can't hold as a float, and
        // keeps it when the float is in range (num-traits' casts).
        let f: f64 = std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(f64::NAN);
        let in_range = if lo == 0 {
            f > -1.0 && f < (hi as f64 + 1.0)
        } else {
            f >= lo as f64 && f < -(lo as f64)
        };
        if in_range {
            return Ok(f as i128);
        }
        Err(Box::new(Failure::Fit(format!("{} is out of range", shown()))))
    }

    /// A number, or the strings Jackson reads as non-numeric numbers; read
    /// as an `f32` when `single` (then exact as `f64`: no double rounding).
    #[inline]
    fn float(&mut self, c: u8, single: bool) -> Parsed<f64> {
        match c {
            b'-' | b'0'..=b'9' => {
                let (text, _) = self.number()?;
                // SAFETY: a number's text is ASCII (checked by `number`).
                let text = unsafe { std::str::from_utf8_unchecked(text) };
                let parsed = if single {
                    text.parse::<f32>().map(f64::from)
                } else {
                    text.parse::<f64>()
                };
                parsed.map_err(|_| Box::new(Failure::Fit(format!("failed to parse {text} as a float"))))
            }
            b'"' => {
                let mut text = Vec::new();
                self.escaped_string(&mut text)?;
                match &text[..] {
                    b"NaN" => Ok(f64::NAN),
                    b"Infinity" | b"+Infinity" => Ok(f64::INFINITY),
                    b"-Infinity" => Ok(f64::NEG_INFINITY),
                    _ => Err(Box::new(Failure::Fit(format!(
                        "string {:?} for a floating-point field (Spark's from_json reads it as null)",
                        String::from_utf8_lossy(&text)
                    )))),
                }
            }
            _ => Err(Box::new(Failure::Fit(format!(
                "expected a number, found {}",
                token_name(c)
            )))),
        }
    }

    /// An integer as seconds since the epoch, or a string as arrow-json parses it.
    fn timestamp(&mut self, c: u8, unit: TimeUnit, tz: &Tz, data_type: &DataType) -> Parsed<i64> {
        let per_second: i64 = match unit {
            TimeUnit::Second => 1,
            TimeUnit::Millisecond => 1_000,
            TimeUnit::Microsecond => 1_000_000,
            TimeUnit::Nanosecond => 1_000_000_000,
        };
        match c {
            b'-' | b'0'..=b'9' => {
                let (text, integer) = self.number()?;
                let text = String::from_utf8_lossy(text);
                let seconds = text
                    .parse::<i64>()
                    .ok()
                    .filter(|_| integer)
                    .ok_or_else(|| Failure::Fit(format!("{text} is not whole seconds for a timestamp")))?;
                seconds
                    .checked_mul(per_second)
                    .ok_or_else(|| Box::new(Failure::Fit(format!("{seconds} seconds overflow the timestamp"))))
            }
            b'"' => {
                let mut text = Vec::new();
                self.string(&mut text)?;
                let text = String::from_utf8_lossy(&text);
                let date = arrow_cast::parse::string_to_datetime(tz, &text)
                    .map_err(|e| Failure::Fit(format!("failed to parse \"{text}\" as {data_type}: {e}")))?;
                match unit {
                    TimeUnit::Second => Some(date.timestamp()),
                    TimeUnit::Millisecond => Some(date.timestamp_millis()),
                    TimeUnit::Microsecond => Some(date.timestamp_micros()),
                    TimeUnit::Nanosecond => date.timestamp_nanos_opt(),
                }
                .ok_or_else(|| Box::new(Failure::Fit(format!("{text} would overflow 64-bit signed nanoseconds"))))
            }
            _ => Err(Box::new(Failure::Fit(format!(
                "expected a timestamp, found {}",
                token_name(c)
            )))),
        }
    }
}

/// Where a field name's bytes are.
enum KeyAt {
    Doc(usize, usize),
    Scratch,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After a piece, the next one's columns are sized from it: lists'
    /// items and strings' bytes too, which a guess per row misses.
    #[test]
    fn each_piece_sizes_its_columns_from_the_last_one() {
        let data_type: DataType = DataType::Struct(Fields::from(vec![
            arrow_schema::Field::new("id", DataType::Utf8, true),
            arrow_schema::Field::new_list("items", arrow_schema::Field::new("item", DataType::Float64, true), true),
        ]));
        let plan = Plan::new(&data_type).unwrap();
        // The sizes asked for, column by column (struct, id, items, item).
        let asked = |rows: usize| {
            let mut sizes = plan.sizes(rows, usize::MAX);
            (0..4).map(|_| sizes.next(rows, rows * 16)).collect::<Vec<_>>()
        };
        assert_eq!(asked(1000), vec![(1000, 16_000); 4], "a guess per row before any piece");
        let id = "x".repeat(40);
        let documents: Vec<String> = (0..1000)
            .map(|i| format!(r#"{{"id":"{id}{i}","items":[1.5,2,3.25,{i}]}}"#))
            .collect();
        let column = arrow_array::StringArray::from(documents.iter().map(String::as_str).collect::<Vec<_>>());
        let values = Values::of(&column).unwrap();
        let parsed = parse(Some(&plan), &values, 0, OnValueError::Raise, false)
            .unwrap()
            .unwrap();
        assert_eq!(parsed.len(), 1000);
        let ids: usize = (0..1000).map(|i| 40 + i.to_string().len()).sum();
        let [row, text, list, item] = asked(1000)[..] else {
            panic!("four columns")
        };
        assert!(row.0 >= 1000 && row.0 < 1200, "{row:?}");
        assert!(
            text.0 > 1000 && text.0 < 1200 && text.1 >= ids && text.1 < ids * 5 / 4,
            "{text:?}"
        );
        assert!(list.0 > 1000 && list.0 < 1200, "{list:?}");
        assert!(item.0 >= 4000 && item.0 < 4700, "{item:?}");
        // Half the rows next time: half the room.
        let [_, half, ..] = asked(500)[..] else {
            panic!("four columns")
        };
        assert!(half.1 >= ids / 2 && half.1 < ids * 5 / 8, "{half:?}");
        // A piece of one small value: no more room than its bytes.
        let mut sizes = plan.sizes(1, 30);
        assert!((0..4)
            .map(|_| sizes.next(1, 16))
            .all(|(items, bytes)| items <= 46 && bytes <= 46));
    }

    /// Clinger's fast path gives what the standard library's correctly
    /// rounded parser gives, bit for bit, on every decimal it accepts.
    #[test]
    fn short_decimals_parse_as_the_standard_library_does() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let (mut accepted, mut accepted_inside) = (0, 0);
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = (x % 10u64.pow(1 + (x >> 60) as u32 % 16)).to_string();
            let point = (x >> 40) as usize % (digits.len() + 1);
            let mut text = String::new();
            if x & 1 == 1 {
                text.push('-');
            }
            text.push_str(&digits[..point.max(1).min(digits.len())]);
            if point > 0 && point < digits.len() {
                text.push('.');
                text.push_str(&digits[point..]);
            }
            let want: f64 = text.parse().unwrap();
            if let Some((got, end)) = short_decimal(text.as_bytes(), 0) {
                assert_eq!(end, text.len(), "{text}");
                accepted += 1;
                assert_eq!(got.to_bits(), want.to_bits(), "{text}");
            }
            // Inside a document, with 16 bytes to read from the number on.
            let document = format!("[{text},\"next\": 12.5, \"last\": 1]");
            let inside = short_decimal(document.as_bytes(), 1);
            assert_eq!(
                inside.map(|(_, end)| end),
                short_decimal(text.as_bytes(), 0).map(|(_, end)| end + 1),
                "{text}"
            );
            if let Some((got, _)) = inside {
                accepted_inside += 1;
                assert_eq!(got.to_bits(), want.to_bits(), "{text}");
            }
        }
        assert!(accepted > 100_000, "{accepted}");
        assert_eq!(accepted_inside, accepted);
        for text in [
            "1e5",
            "1.5E-3",
            "1234567890123456",
            "0.1234567890123456",
            "-0",
            "-0.0",
            "0.1",
            "9007199254740993",
        ] {
            let want: f64 = text.parse().unwrap();
            assert_eq!(
                short_decimal(text.as_bytes(), 0).map_or(want, |(v, _)| v).to_bits(),
                want.to_bits(),
                "{text}"
            );
        }
        // Not numbers by RFC 8259, or with an exponent: left to `Parser::number`.
        for text in ["01", "-", "-x", "1.", "1.e5", "-01.5", ".5", "1.5e3", "2E1", ""] {
            assert_eq!(short_decimal(text.as_bytes(), 0), None, "{text}");
            let document = format!("{text}, \"padding\": [1, 2, 3]");
            assert_eq!(short_decimal(document.as_bytes(), 0), None, "{document}");
        }
        // Runs that reach past 8 digits or past the 16 bytes read at once.
        for text in [
            "123456789.5",
            "1.234567891",
            "12345678.1234567",
            "0.000000000000001",
            "1234567.12345678",
        ] {
            let want: f64 = text.parse().unwrap();
            let document = format!("{text}, \"padding\": [1, 2, 3]");
            let got = short_decimal(document.as_bytes(), 0).map_or(want, |(v, end)| {
                assert_eq!(end, text.len(), "{text}");
                v
            });
            assert_eq!(got.to_bits(), want.to_bits(), "{text}");
        }
        // A number ends where a byte that can't continue it follows.
        assert_eq!(short_decimal(b"[12.5,3]", 1), Some((12.5, 5)));
        assert_eq!(
            short_decimal(b"-0}", 0).map(|(v, end)| (v.to_bits(), end)),
            Some(((-0.0f64).to_bits(), 2))
        );
    }

    /// Short integers read as the standard library reads them; others are left to `Parser::integer`.
    #[test]
    fn short_integers_parse_as_the_standard_library_does() {
        for text in ["0", "7", "42", "100", "999999999999999999", "123456789012345678"] {
            assert_eq!(
                short_integer(text.as_bytes(), 0),
                Some((text.parse().unwrap(), text.len())),
                "{text}"
            );
        }
        for text in [
            "",
            "01",
            "1.5",
            "2e3",
            "3E1",
            "1234567890123456789",
            "99999999999999999999",
            "-1",
            "x",
        ] {
            assert_eq!(short_integer(text.as_bytes(), 0), None, "{text}");
        }
        assert_eq!(short_integer(b"[12,3]", 1), Some((12, 3)));
        assert_eq!(short_integer(b"0}", 0), Some((0, 1)));
    }

    /// Runs copied by the fixed-size move equal the slices, at every length
    /// and near the end of the document.
    #[test]
    fn string_runs_copy_exactly_their_bytes() {
        let doc: Vec<u8> = (0..100u8).collect();
        for from in 0..doc.len() {
            for to in from..=doc.len().min(from + SHORT_RUN + 2) {
                let mut out = b"head".to_vec();
                append_run(&mut out, &doc, from, to);
                assert_eq!(&out[..4], b"head");
                assert_eq!(&out[4..], &doc[from..to]);
            }
        }
    }
}
