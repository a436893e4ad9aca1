//! The Protobuf wire format read straight into the columns, driven by the
//! compiled descriptor (no `DynamicMessage` in between).
//!
//! Each message column carries a [`Plan`]: its fields by number, each with
//! its wire kind, shape (single, list, map) and oneof. A message is read in
//! two passes over its bytes (or over the bytes of every occurrence of it,
//! since merging protobuf messages is reading their encodings one after the
//! other):
//!
//! 1. the scan: every field is checked against its wire type and decoded;
//!    single scalars keep their last occurrence (last one wins), lists
//!    append their items at once (packed or not), single messages note
//!    where each occurrence lies (they merge), map entries are collected,
//!    and a oneof member clears the member set before it;
//! 2. the emit: one value per field is appended (the last occurrence, the
//!    merged message, the map entries in key order with the last of equal
//!    keys, or null or the default when unset).
//!
//! The semantics are prost-reflect's `DynamicMessage` decoding (which the
//! slow path still uses): unknown fields are skipped (groups included,
//! checked for their end tag), a known field in another wire type fails its
//! value, every string is checked for UTF-8, and messages and groups nest at
//! most [`RECURSION_LIMIT`] levels. Nothing is allocated from a size read off
//! the wire: lengths are checked against the bytes first, and the scratch
//! space grows with what was actually read.
//!
//! A value that fails leaves the columns half-written; the caller drops the
//! decoder and parses the rows around the bad one again (see
//! `ValueFormat::parse`).

use std::cmp::Ordering;
use std::fmt::Write as _;

use prost_reflect::{EnumDescriptor, FieldDescriptor, Kind, Value};

use super::{micros_of, offset, Column, MessageColumn};

/// How deep messages and groups may nest in a value, as prost counts.
pub(super) const RECURSION_LIMIT: u32 = 100;
/// Field numbers below this are looked up in a table, others by search.
const DENSE: u32 = 256;
const NONE: u32 = u32::MAX;

/// What decodes a field's values: its protobuf kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wire {
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Fixed32,
    Fixed64,
    Sfixed32,
    Sfixed64,
    Float,
    Double,
    Bool,
    Str,
    Bytes,
    Enum,
    Message,
}

impl Wire {
    pub(super) fn of(kind: &Kind) -> Wire {
        match kind {
            Kind::Int32 => Wire::Int32,
            Kind::Int64 => Wire::Int64,
            Kind::Uint32 => Wire::Uint32,
            Kind::Uint64 => Wire::Uint64,
            Kind::Sint32 => Wire::Sint32,
            Kind::Sint64 => Wire::Sint64,
            Kind::Fixed32 => Wire::Fixed32,
            Kind::Fixed64 => Wire::Fixed64,
            Kind::Sfixed32 => Wire::Sfixed32,
            Kind::Sfixed64 => Wire::Sfixed64,
            Kind::Float => Wire::Float,
            Kind::Double => Wire::Double,
            Kind::Bool => Wire::Bool,
            Kind::String => Wire::Str,
            Kind::Bytes => Wire::Bytes,
            Kind::Enum(_) => Wire::Enum,
            Kind::Message(_) => Wire::Message,
        }
    }

    /// The wire type a single value of this kind is written in.
    fn wire_type(self) -> u8 {
        match self {
            Wire::Fixed64 | Wire::Sfixed64 | Wire::Double => 1,
            Wire::Fixed32 | Wire::Sfixed32 | Wire::Float => 5,
            Wire::Str | Wire::Bytes | Wire::Message => 2,
            _ => 0,
        }
    }

    fn packable(self) -> bool {
        !matches!(self, Wire::Str | Wire::Bytes | Wire::Message)
    }

    fn name(self) -> &'static str {
        match self {
            Wire::Int32 => "int32",
            Wire::Int64 => "int64",
            Wire::Uint32 => "uint32",
            Wire::Uint64 => "uint64",
            Wire::Sint32 => "sint32",
            Wire::Sint64 => "sint64",
            Wire::Fixed32 => "fixed32",
            Wire::Fixed64 => "fixed64",
            Wire::Sfixed32 => "sfixed32",
            Wire::Sfixed64 => "sfixed64",
            Wire::Float => "float",
            Wire::Double => "double",
            Wire::Bool => "bool",
            Wire::Str => "string",
            Wire::Bytes => "bytes",
            Wire::Enum => "enum",
            Wire::Message => "message",
        }
    }
}

/// Enum value names by number (a table for small non-negative numbers).
pub(super) struct EnumNames {
    dense: Vec<Option<Box<str>>>,
    sparse: Vec<(i32, Box<str>)>,
}

impl EnumNames {
    pub(super) fn of(e: &EnumDescriptor) -> EnumNames {
        let mut dense: Vec<Option<Box<str>>> = Vec::new();
        let mut sparse = Vec::new();
        for v in e.values() {
            let n = v.number();
            match usize::try_from(n) {
                Ok(i) if i < 1024 => {
                    if dense.len() <= i {
                        dense.resize(i + 1, None);
                    }
                    // The first name of a number (aliases share it), as prost-reflect's lookup.
                    if dense[i].is_none() {
                        dense[i] = e.get_value(n).map(|v| v.name().into());
                    }
                }
                _ => sparse.push((n, e.get_value(n).map(|v| v.name().into()).unwrap_or_default())),
            }
        }
        sparse.sort_by_key(|(n, _)| *n);
        sparse.dedup_by_key(|(n, _)| *n);
        EnumNames { dense, sparse }
    }

    fn get(&self, n: i32) -> Option<&str> {
        match usize::try_from(n) {
            Ok(i) if i < self.dense.len() => self.dense[i].as_deref(),
            _ => self
                .sparse
                .binary_search_by_key(&n, |(k, _)| *k)
                .ok()
                .map(|i| &*self.sparse[i].1),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Single,
    List,
    /// Key and value kinds.
    Map(Wire, Wire),
    /// A message field left out: it would nest past the recursion limit.
    TooDeep,
}

struct Slot {
    number: u32,
    name: String,
    wire: Wire,
    shape: Shape,
    /// Index in the message column's fields (not for `TooDeep`).
    column: usize,
    oneof: u32,
    /// Null when unset (else the default).
    presence: bool,
    /// A map entry's value when it has none: the first value of an enum, else zero or empty.
    map_default: u64,
    /// The default of a field without presence as [`scalar`] bits, when it has such bits.
    unset_bits: Option<u64>,
    /// A field left out (`TooDeep`): its message (or map entry), read by
    /// `DynamicMessage` only to check it when a oneof member replaces it.
    deep: Option<prost_reflect::MessageDescriptor>,
}

/// One map entry as read: its key, and where its value is.
struct Entry {
    key: Key,
    seen: bool,
    a: u64,
    b: usize,
    /// Occurrences of a message value, a range of `State::entry_segs`.
    segs: (usize, usize),
}

#[derive(Clone, Copy)]
enum Key {
    Bool(bool),
    I64(i64),
    U64(u64),
    /// A string key's bytes in the value.
    Str(usize, usize),
}

/// What the scan found for one field of the message being read.
#[derive(Default)]
struct State {
    seen: bool,
    /// A scalar's value bits, or a string's start.
    a: u64,
    /// A string's end.
    b: usize,
    /// Occurrences of a single message field (they merge).
    segs: Vec<(usize, usize)>,
    /// Items appended to a list this row.
    count: usize,
    entries: Vec<Entry>,
    entry_segs: Vec<(usize, usize)>,
}

impl State {
    fn clear(&mut self) {
        self.seen = false;
        self.segs.clear();
        self.count = 0;
        self.entries.clear();
        self.entry_segs.clear();
    }
}

/// How one message type's fields are read.
pub(super) struct Plan {
    slots: Vec<Slot>,
    dense: Vec<u32>,
    sparse: Vec<(u32, u32)>,
    state: Vec<State>,
    /// Per oneof, the member set last (a slot), or NONE.
    oneofs: Vec<u32>,
}

impl Plan {
    /// The plan for `fields` (the columns, in order) and `too_deep`.
    pub(super) fn new(fields: &[(FieldDescriptor, Column)], too_deep: &[FieldDescriptor]) -> Plan {
        let mut oneof_names: Vec<String> = Vec::new();
        let mut slots = Vec::new();
        let all = fields
            .iter()
            .enumerate()
            .map(|(i, (f, _))| (f, Some(i)))
            .chain(too_deep.iter().map(|f| (f, None)));
        for (field, column) in all {
            let oneof = match field.containing_oneof() {
                Some(o) => {
                    let at = oneof_names.iter().position(|n| n == o.full_name()).unwrap_or_else(|| {
                        oneof_names.push(o.full_name().to_string());
                        oneof_names.len() - 1
                    });
                    at as u32
                }
                None => NONE,
            };
            let shape = match column {
                None => Shape::TooDeep,
                Some(_) if field.is_map() => match field.kind() {
                    Kind::Message(entry) => Shape::Map(
                        Wire::of(&entry.map_entry_key_field().kind()),
                        Wire::of(&entry.map_entry_value_field().kind()),
                    ),
                    _ => Shape::TooDeep,
                },
                Some(_) if field.is_list() => Shape::List,
                Some(_) => Shape::Single,
            };
            let map_default = match field.kind() {
                Kind::Message(entry) if field.is_map() => match entry.map_entry_value_field().default_value() {
                    Value::EnumNumber(n) => u64::from(n as u32),
                    _ => 0,
                },
                _ => 0,
            };
            let unset_bits = match field.default_value() {
                Value::I32(v) => Some(u64::from(v as u32)),
                Value::I64(v) => Some(v as u64),
                Value::U32(v) => Some(u64::from(v)),
                Value::U64(v) => Some(v),
                Value::F32(v) => Some(u64::from(v.to_bits())),
                Value::F64(v) => Some(v.to_bits()),
                Value::Bool(v) => Some(u64::from(v)),
                Value::EnumNumber(n) => Some(u64::from(n as u32)),
                Value::String(s) if s.is_empty() => Some(0),
                Value::Bytes(b) if b.is_empty() => Some(0),
                _ => None,
            };
            slots.push(Slot {
                number: field.number(),
                name: field.name().to_string(),
                wire: Wire::of(&field.kind()),
                shape,
                column: column.unwrap_or(0),
                oneof,
                presence: field.supports_presence() && !field.is_list() && !field.is_map(),
                map_default,
                unset_bits,
                deep: match (column, field.kind()) {
                    (None, Kind::Message(m)) => Some(m),
                    _ => None,
                },
            });
        }
        let mut dense = Vec::new();
        let mut sparse = Vec::new();
        for (i, slot) in slots.iter().enumerate() {
            if slot.number < DENSE {
                let n = slot.number as usize;
                if dense.len() <= n {
                    dense.resize(n + 1, NONE);
                }
                dense[n] = i as u32;
            } else {
                sparse.push((slot.number, i as u32));
            }
        }
        sparse.sort_unstable();
        let state = slots.iter().map(|_| State::default()).collect();
        Plan {
            slots,
            dense,
            sparse,
            state,
            oneofs: vec![NONE; oneof_names.len()],
        }
    }

    #[inline]
    fn lookup(&self, number: u32) -> Option<usize> {
        if number < DENSE {
            match self.dense.get(number as usize) {
                Some(&i) if i != NONE => Some(i as usize),
                _ => None,
            }
        } else {
            self.sparse
                .binary_search_by_key(&number, |(n, _)| *n)
                .ok()
                .map(|i| self.sparse[i].1 as usize)
        }
    }
}

/// A failure: where (a byte of the value being read) and why.
pub(super) struct Fail {
    pub(super) at: usize,
    pub(super) why: String,
}

pub(super) type R<T> = Result<T, Fail>;

#[cold]
fn fail<T>(at: usize, why: impl Into<String>) -> R<T> {
    Err(Fail { at, why: why.into() })
}

/// The varint at `*pos` (before `end`), moving past it; prost's rules (at
/// most 10 bytes, the tenth at most 1).
#[inline(always)]
fn varint(buf: &[u8], pos: &mut usize, end: usize) -> R<u64> {
    let p = *pos;
    if p < end {
        let b = buf[p];
        if b < 0x80 {
            *pos = p + 1;
            return Ok(u64::from(b));
        }
    }
    varint_slow(buf, pos, end)
}

#[inline(never)]
fn varint_slow(buf: &[u8], pos: &mut usize, end: usize) -> R<u64> {
    let start = *pos;
    let mut value: u64 = 0;
    for count in 0..10 {
        let p = start + count;
        if p >= end {
            return fail(start, "invalid varint (it runs past the end)");
        }
        let byte = buf[p];
        value |= u64::from(byte & 0x7f) << (count * 7);
        if byte < 0x80 {
            if count == 9 && byte >= 0x02 {
                return fail(start, "invalid varint (over 64 bits)");
            }
            *pos = p + 1;
            return Ok(value);
        }
    }
    fail(start, "invalid varint (over 10 bytes)")
}

#[inline(always)]
fn fixed32(buf: &[u8], pos: &mut usize, end: usize) -> R<u32> {
    let p = *pos;
    if end - p < 4 {
        return fail(p, "a 32-bit value runs past the end");
    }
    *pos = p + 4;
    Ok(u32::from_le_bytes([buf[p], buf[p + 1], buf[p + 2], buf[p + 3]]))
}

#[inline(always)]
fn fixed64(buf: &[u8], pos: &mut usize, end: usize) -> R<u64> {
    let p = *pos;
    if end - p < 8 {
        return fail(p, "a 64-bit value runs past the end");
    }
    *pos = p + 8;
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[p..p + 8]);
    Ok(u64::from_le_bytes(b))
}

/// A length prefix and the bytes it claims, checked against `end`.
#[inline(always)]
fn delimited(buf: &[u8], pos: &mut usize, end: usize) -> R<(usize, usize)> {
    let at = *pos;
    let len = varint(buf, pos, end)?;
    let left = (end - *pos) as u64;
    if len > left {
        return fail(at, format!("a length of {len} runs past the end ({left} bytes left)"));
    }
    let start = *pos;
    *pos = start + len as usize;
    Ok((start, *pos))
}

/// A field key: its number and wire type, checked as prost does.
#[inline(always)]
fn key(buf: &[u8], pos: &mut usize, end: usize) -> R<(u32, u8)> {
    let at = *pos;
    let key = varint(buf, pos, end)?;
    if key > u64::from(u32::MAX) {
        return fail(at, format!("invalid field key {key}"));
    }
    let wire = (key & 7) as u8;
    if wire > 5 {
        return fail(at, format!("invalid wire type {wire}"));
    }
    let number = (key >> 3) as u32;
    if number == 0 {
        return fail(at, "invalid field number 0");
    }
    Ok((number, wire))
}

const WIRE_NAMES: [&str; 6] = [
    "varint",
    "64-bit",
    "length-delimited",
    "start group",
    "end group",
    "32-bit",
];

#[cold]
fn wrong_wire<T>(at: usize, what: &str, wire: u8, kind: Wire) -> R<T> {
    let expected = kind.wire_type();
    fail(
        at,
        format!(
            "{what} has wire type {wire} ({}) where a {} takes wire type {expected} ({})",
            WIRE_NAMES[usize::from(wire).min(5)],
            kind.name(),
            WIRE_NAMES[usize::from(expected)]
        ),
    )
}

/// Skip an unknown field of wire type `wire` (a group up to its end tag).
fn skip(buf: &[u8], pos: &mut usize, end: usize, number: u32, wire: u8, depth: u32) -> R<()> {
    match wire {
        0 => varint(buf, pos, end).map(drop),
        1 => fixed64(buf, pos, end).map(drop),
        2 => delimited(buf, pos, end).map(drop),
        5 => fixed32(buf, pos, end).map(drop),
        3 => {
            let at = *pos;
            if depth >= RECURSION_LIMIT {
                return fail(at, "recursion limit reached (groups nest too deep)");
            }
            loop {
                if *pos >= end {
                    return fail(at, format!("group {number} has no end tag"));
                }
                let (inner, w) = key(buf, pos, end)?;
                if w == 4 {
                    if inner != number {
                        return fail(at, format!("group {number} ends with the end tag of {inner}"));
                    }
                    return Ok(());
                }
                skip(buf, pos, end, inner, w, depth + 1)?;
            }
        }
        _ => fail(
            *pos,
            format!("an end group tag of field {number} where no group is open"),
        ),
    }
}

/// One scalar of `kind` at `*pos` in wire type `wire`: its bits as the
/// column stores them (`a`), and a string's end (`b`, `a` its start).
#[inline(always)]
fn scalar(buf: &[u8], pos: &mut usize, end: usize, kind: Wire, wire: u8, what: &dyn Fn() -> String) -> R<(u64, usize)> {
    let at = *pos;
    if wire != kind.wire_type() {
        return wrong_wire(at, &what(), wire, kind);
    }
    Ok(match kind {
        Wire::Int32 | Wire::Enum => (u64::from(varint(buf, pos, end)? as i32 as u32), 0),
        Wire::Int64 | Wire::Uint64 => (varint(buf, pos, end)?, 0),
        Wire::Uint32 => (u64::from(varint(buf, pos, end)? as u32), 0),
        Wire::Sint32 => {
            let v = varint(buf, pos, end)? as u32;
            (u64::from(((v >> 1) as i32 ^ -((v & 1) as i32)) as u32), 0)
        }
        Wire::Sint64 => {
            let v = varint(buf, pos, end)?;
            (((v >> 1) as i64 ^ -((v & 1) as i64)) as u64, 0)
        }
        Wire::Bool => (u64::from(varint(buf, pos, end)? != 0), 0),
        Wire::Fixed32 | Wire::Sfixed32 | Wire::Float => (u64::from(fixed32(buf, pos, end)?), 0),
        Wire::Fixed64 | Wire::Sfixed64 | Wire::Double => (fixed64(buf, pos, end)?, 0),
        Wire::Str => {
            let (s, e) = delimited(buf, pos, end)?;
            if std::str::from_utf8(&buf[s..e]).is_err() {
                return fail(at, format!("{} is not UTF-8", what()));
            }
            (s as u64, e)
        }
        Wire::Bytes => {
            let (s, e) = delimited(buf, pos, end)?;
            (s as u64, e)
        }
        Wire::Message => unreachable!("messages are not scalars"),
    })
}

/// Append a scalar read by [`scalar`] to its column.
#[inline(always)]
fn append_scalar(column: &mut Column, buf: &[u8], a: u64, b: usize) {
    match column {
        Column::I32(x) => x.append_value(a as u32 as i32),
        Column::I64(x) => x.append_value(a as i64),
        Column::U32(x) => x.append_value(a as u32),
        Column::U64(x) => x.append_value(a),
        Column::F32(x) => x.append_value(f32::from_bits(a as u32)),
        Column::F64(x) => x.append_value(f64::from_bits(a)),
        Column::Bool(x) => x.append_value(a != 0),
        Column::Str(x) => {
            let bytes = &buf[a as usize..b];
            // SAFETY: every string range handed here came from `scalar` with
            // `Wire::Str`, which checked it for UTF-8, or is empty.
            x.append_value(unsafe { std::str::from_utf8_unchecked(bytes) })
        }
        Column::Bin(x) => x.append_value(&buf[a as usize..b]),
        Column::Enum(x, _, names) => {
            let n = a as u32 as i32;
            match names.get(n) {
                Some(name) => x.append_value(name),
                None => {
                    // An open (proto3) enum keeps numbers it has no name for.
                    let _ = write!(x, "{n}");
                    x.append_value("");
                }
            }
        }
        // Timestamps, durations, wrappers and messages are not scalars.
        _ => column.append_null(),
    }
}

/// The bytes being read and how deep recursive messages may unroll.
pub(super) struct Cx<'a> {
    pub(super) buf: &'a [u8],
    pub(super) limit: usize,
}

impl MessageColumn {
    /// Check one whole message (`cx.buf`) as [`MessageColumn::decode`] reads
    /// it, appending nothing.
    pub(super) fn check(&self, cx: &Cx) -> R<()> {
        check(self, cx, 0, cx.buf.len(), 0)
    }

    /// Read one message (the concatenation of `segs`, byte ranges of the
    /// value) at nesting `depth` and append it as a row.
    pub(super) fn decode(&mut self, cx: &Cx, segs: &[(usize, usize)], depth: u32) -> R<()> {
        let MessageColumn {
            fields,
            unset,
            plan,
            nulls,
            len,
            name,
            ..
        } = self;
        for state in &mut plan.state {
            state.clear();
        }
        // (A loop, not `fill`: a call to memset per message, even empty, cost a tenth of the time.)
        for oneof in plan.oneofs.iter_mut() {
            *oneof = NONE;
        }
        for &(start, end) in segs {
            scan(plan, fields, cx, start, end, depth)?;
        }
        // The emit: one value per field.
        let buf = cx.buf;
        for (i, slot) in plan.slots.iter().enumerate() {
            let state = &mut plan.state[i];
            if slot.shape == Shape::TooDeep {
                if state.seen {
                    return fail(
                        segs.first().map_or(0, |s| s.0),
                        format!(
                            "{name}.{} nests deeper than the limit of {} levels of a recursive message",
                            slot.name, cx.limit
                        ),
                    );
                }
                continue;
            }
            let column = &mut fields[slot.column].1;
            match slot.shape {
                Shape::Single if slot.wire == Wire::Message => {
                    if state.seen {
                        message_value(column, cx, &state.segs, depth + 1)?;
                    } else {
                        column.append_null();
                    }
                }
                Shape::Single => {
                    if state.seen {
                        append_scalar(column, buf, state.a, state.b);
                    } else if let (false, Some(bits)) = (slot.presence, slot.unset_bits) {
                        // Empty strings and bytes are `0..0`.
                        append_scalar(column, buf, bits, 0);
                    } else {
                        match &unset[slot.column] {
                            Some(default) if !slot.presence => {
                                column.append(default, cx.limit).map_err(|why| Fail { at: 0, why })?
                            }
                            _ => column.append_null(),
                        }
                    }
                }
                Shape::List => {
                    let Column::List(list) = column else {
                        unreachable!("a list field has a list column")
                    };
                    let count = offset(state.count).map_err(|why| Fail { at: 0, why })?;
                    let end = list.offsets.last().copied().unwrap_or(0) + count;
                    list.offsets.push(end);
                    list.nulls.append_non_null();
                }
                Shape::Map(_, value_kind) => {
                    emit_map(column, state, cx, value_kind, slot.map_default, depth)?;
                }
                Shape::TooDeep => {}
            }
        }
        nulls.append_non_null();
        *len += 1;
        Ok(())
    }
}

/// Pass 1 over one occurrence's bytes `start..end`.
fn scan(
    plan: &mut Plan,
    fields: &mut [(FieldDescriptor, Column)],
    cx: &Cx,
    start: usize,
    end: usize,
    depth: u32,
) -> R<()> {
    let buf = cx.buf;
    let mut pos = start;
    while pos < end {
        let at = pos;
        let (number, wire) = key(buf, &mut pos, end)?;
        let Some(i) = plan.lookup(number) else {
            skip(buf, &mut pos, end, number, wire, depth)?;
            continue;
        };
        let slot = &plan.slots[i];
        if slot.oneof != NONE {
            let current = &mut plan.oneofs[slot.oneof as usize];
            if *current != i as u32 {
                if *current != NONE {
                    let before = *current as usize;
                    let other = &plan.slots[before];
                    // prost-reflect read the member being replaced (and failed on it if bad).
                    for &(s, e) in &plan.state[before].segs {
                        match &other.deep {
                            Some(deep) => check_deep(deep, cx, s, e)?,
                            None => check_value(&fields[other.column].1, cx, s, e, depth + 1)?,
                        }
                    }
                    plan.state[before].clear();
                }
                *current = i as u32;
            }
        }
        let state = &mut plan.state[i];
        let what = || format!("field {} ({number})", slot.name);
        match slot.shape {
            Shape::Single if slot.wire == Wire::Message => {
                if wire != 2 {
                    return wrong_wire(at, &what(), wire, Wire::Message);
                }
                let seg = delimited(buf, &mut pos, end)?;
                if depth + 1 > RECURSION_LIMIT {
                    return fail(at, "recursion limit reached (messages nest too deep)");
                }
                state.segs.push(seg);
                state.seen = true;
            }
            Shape::Single => {
                let (a, b) = scalar(buf, &mut pos, end, slot.wire, wire, &what)?;
                state.a = a;
                state.b = b;
                state.seen = true;
            }
            Shape::TooDeep => {
                if wire != 2 {
                    return wrong_wire(at, &what(), wire, Wire::Message);
                }
                let seg = delimited(buf, &mut pos, end)?;
                state.segs.push(seg);
                state.seen = true;
            }
            Shape::List => {
                let Column::List(list) = &mut fields[slot.column].1 else {
                    unreachable!("a list field has a list column")
                };
                let item = &mut list.item;
                if slot.wire == Wire::Message {
                    if wire != 2 {
                        return wrong_wire(at, &what(), wire, Wire::Message);
                    }
                    let seg = delimited(buf, &mut pos, end)?;
                    message_value(item, cx, &[seg], depth + 1)?;
                    state.count += 1;
                } else if wire == 2 && slot.wire.packable() {
                    let (s, e) = delimited(buf, &mut pos, end)?;
                    let mut p = s;
                    let element = slot.wire.wire_type();
                    while p < e {
                        let (a, b) = scalar(buf, &mut p, e, slot.wire, element, &what)?;
                        append_scalar(item, buf, a, b);
                        state.count += 1;
                    }
                } else {
                    let (a, b) = scalar(buf, &mut pos, end, slot.wire, wire, &what)?;
                    append_scalar(item, buf, a, b);
                    state.count += 1;
                }
            }
            Shape::Map(key_kind, value_kind) => {
                if wire != 2 {
                    return wrong_wire(at, &format!("{} (a map)", what()), wire, Wire::Message);
                }
                let (s, e) = delimited(buf, &mut pos, end)?;
                map_entry(state, buf, s, e, key_kind, value_kind, depth, &what)?;
            }
        }
    }
    Ok(())
}

/// Check a message's bytes (`start..end` of `m`'s type) as [`MessageColumn::decode`]
/// would read them, appending nothing.
fn check(m: &MessageColumn, cx: &Cx, start: usize, end: usize, depth: u32) -> R<()> {
    let (buf, plan) = (cx.buf, &m.plan);
    let mut pos = start;
    while pos < end {
        let at = pos;
        let (number, wire) = key(buf, &mut pos, end)?;
        let Some(i) = plan.lookup(number) else {
            skip(buf, &mut pos, end, number, wire, depth)?;
            continue;
        };
        let slot = &plan.slots[i];
        let what = || format!("field {} ({number})", slot.name);
        let packed = wire == 2 && slot.wire.packable();
        match slot.shape {
            Shape::TooDeep => {
                if wire != 2 {
                    return wrong_wire(at, &what(), wire, Wire::Message);
                }
                let (s, e) = delimited(buf, &mut pos, end)?;
                if let Some(deep) = &slot.deep {
                    check_deep(deep, cx, s, e)?;
                }
            }
            Shape::Map(key_kind, value_kind) => {
                if wire != 2 {
                    return wrong_wire(at, &format!("{} (a map)", what()), wire, Wire::Message);
                }
                let (s, e) = delimited(buf, &mut pos, end)?;
                let Column::Map(map) = &m.fields[slot.column].1 else {
                    unreachable!("a map field has a map column")
                };
                let mut p = s;
                while p < e {
                    let at = p;
                    let (n, w) = key(buf, &mut p, e)?;
                    match n {
                        1 => scalar(buf, &mut p, e, key_kind, w, &what).map(drop)?,
                        2 if value_kind == Wire::Message => {
                            if w != 2 {
                                return wrong_wire(at, &what(), w, Wire::Message);
                            }
                            let (vs, ve) = delimited(buf, &mut p, e)?;
                            check_value(&map.value, cx, vs, ve, depth + 1)?;
                        }
                        2 => scalar(buf, &mut p, e, value_kind, w, &what).map(drop)?,
                        _ => skip(buf, &mut p, e, n, w, depth)?,
                    }
                }
            }
            _ if slot.wire == Wire::Message => {
                if wire != 2 {
                    return wrong_wire(at, &what(), wire, Wire::Message);
                }
                let (s, e) = delimited(buf, &mut pos, end)?;
                let column = match &m.fields[slot.column].1 {
                    Column::List(list) => &list.item,
                    column => column,
                };
                check_value(column, cx, s, e, depth + 1)?;
            }
            Shape::List if packed => {
                let (s, e) = delimited(buf, &mut pos, end)?;
                let mut p = s;
                while p < e {
                    scalar(buf, &mut p, e, slot.wire, slot.wire.wire_type(), &what)?;
                }
            }
            _ => scalar(buf, &mut pos, end, slot.wire, wire, &what).map(drop)?,
        }
    }
    Ok(())
}

/// Check a message nested past the columns (a rare path): `DynamicMessage` reads it.
fn check_deep(message: &prost_reflect::MessageDescriptor, cx: &Cx, s: usize, e: usize) -> R<()> {
    match prost_reflect::DynamicMessage::decode(message.clone(), &cx.buf[s..e]) {
        Ok(_) => Ok(()),
        Err(why) => fail(s, format!("bad {} message: {why}", message.full_name())),
    }
}

/// [`check`] for a message-typed value of `column`'s kind.
fn check_value(column: &Column, cx: &Cx, s: usize, e: usize, depth: u32) -> R<()> {
    if depth > RECURSION_LIMIT {
        return fail(s, "recursion limit reached (messages nest too deep)");
    }
    match column {
        Column::Message(m) => check(m, cx, s, e, depth),
        Column::Timestamp(_) | Column::Duration(_) => seconds_nanos(cx, &[(s, e)], depth).map(drop),
        Column::Wrapper(_, _, kind) => {
            let mut p = s;
            while p < e {
                let (number, wire) = key(cx.buf, &mut p, e)?;
                if number == 1 {
                    scalar(cx.buf, &mut p, e, *kind, wire, &|| "a wrapper's value (1)".to_string())?;
                } else {
                    skip(cx.buf, &mut p, e, number, wire, depth)?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Read one map entry (`s..e`) into `state.entries`.
#[allow(clippy::too_many_arguments)]
fn map_entry(
    state: &mut State,
    buf: &[u8],
    s: usize,
    e: usize,
    key_kind: Wire,
    value_kind: Wire,
    depth: u32,
    what: &dyn Fn() -> String,
) -> R<()> {
    let mut k: (u64, usize) = (0, 0);
    let mut entry = Entry {
        key: Key::Bool(false),
        seen: false,
        a: 0,
        b: 0,
        segs: (state.entry_segs.len(), state.entry_segs.len()),
    };
    let mut p = s;
    while p < e {
        let at = p;
        let (number, wire) = key(buf, &mut p, e)?;
        match number {
            1 => k = scalar(buf, &mut p, e, key_kind, wire, &|| format!("{} key", what()))?,
            2 if value_kind == Wire::Message => {
                if wire != 2 {
                    return wrong_wire(at, &format!("{} value", what()), wire, Wire::Message);
                }
                let seg = delimited(buf, &mut p, e)?;
                if depth + 1 > RECURSION_LIMIT {
                    return fail(at, "recursion limit reached (messages nest too deep)");
                }
                state.entry_segs.push(seg);
                entry.seen = true;
            }
            2 => {
                let (a, b) = scalar(buf, &mut p, e, value_kind, wire, &|| format!("{} value", what()))?;
                entry.a = a;
                entry.b = b;
                entry.seen = true;
            }
            _ => skip(buf, &mut p, e, number, wire, depth)?,
        }
    }
    entry.key = match key_kind {
        Wire::Bool => Key::Bool(k.0 != 0),
        Wire::Int32 | Wire::Sint32 | Wire::Sfixed32 => Key::I64(i64::from(k.0 as u32 as i32)),
        Wire::Int64 | Wire::Sint64 | Wire::Sfixed64 => Key::I64(k.0 as i64),
        Wire::Uint32 | Wire::Fixed32 => Key::U64(u64::from(k.0 as u32)),
        Wire::Str => Key::Str(k.0 as usize, k.1),
        _ => Key::U64(k.0),
    };
    entry.segs.1 = state.entry_segs.len();
    state.entries.push(entry);
    Ok(())
}

fn compare(buf: &[u8], a: &Key, b: &Key) -> Ordering {
    match (a, b) {
        (Key::Bool(x), Key::Bool(y)) => x.cmp(y),
        (Key::I64(x), Key::I64(y)) => x.cmp(y),
        (Key::U64(x), Key::U64(y)) => x.cmp(y),
        (Key::Str(xs, xe), Key::Str(ys, ye)) => buf[*xs..*xe].cmp(&buf[*ys..*ye]),
        _ => Ordering::Equal,
    }
}

/// Append a map row: its entries by key, the last of equal keys.
fn emit_map(column: &mut Column, state: &mut State, cx: &Cx, value_kind: Wire, default: u64, depth: u32) -> R<()> {
    let Column::Map(map) = column else {
        unreachable!("a map field has a map column")
    };
    let buf = cx.buf;
    let entries = &mut state.entries;
    // Stable: equal keys keep their wire order, and the last one stays.
    entries.sort_by(|x, y| compare(buf, &x.key, &y.key));
    let mut kept = 0usize;
    for i in 0..entries.len() {
        if i + 1 < entries.len() && compare(buf, &entries[i].key, &entries[i + 1].key) == Ordering::Equal {
            if value_kind == Wire::Message {
                // prost-reflect read the value a later entry replaces (and failed on it if bad).
                for &(s, e) in &state.entry_segs[entries[i].segs.0..entries[i].segs.1] {
                    check_value(&map.value, cx, s, e, depth + 1)?;
                }
            }
            continue;
        }
        let entry = &entries[i];
        let (a, b) = match entry.key {
            Key::Bool(v) => (u64::from(v), 0),
            Key::I64(v) => (v as u64, 0),
            Key::U64(v) => (v, 0),
            Key::Str(s, e) => (s as u64, e),
        };
        append_scalar(&mut map.key, buf, a, b);
        if value_kind == Wire::Message {
            // An entry without a value holds the empty message.
            message_value(
                &mut map.value,
                cx,
                &state.entry_segs[entry.segs.0..entry.segs.1],
                depth + 1,
            )?;
        } else if entry.seen {
            append_scalar(&mut map.value, buf, entry.a, entry.b);
        } else {
            // The value's default: zero, empty, or the first enum value.
            append_scalar(&mut map.value, buf, default, 0);
        }
        kept += 1;
    }
    let count = offset(kept).map_err(|why| Fail { at: 0, why })?;
    let end = map.offsets.last().copied().unwrap_or(0) + count;
    map.offsets.push(end);
    map.nulls.append_non_null();
    Ok(())
}

/// Append a message-typed value (the concatenation of `segs`): a struct
/// row, a `Timestamp` or `Duration` in microseconds, or a wrapper's value.
fn message_value(column: &mut Column, cx: &Cx, segs: &[(usize, usize)], depth: u32) -> R<()> {
    if depth > RECURSION_LIMIT {
        return fail(
            segs.first().map_or(0, |s| s.0),
            "recursion limit reached (messages nest too deep)",
        );
    }
    match column {
        Column::Message(m) => m.decode(cx, segs, depth),
        Column::Timestamp(b) => {
            let (s, n) = seconds_nanos(cx, segs, depth)?;
            b.append_value(micros_of(s, n, "Timestamp").map_err(|why| Fail { at: 0, why })?);
            Ok(())
        }
        Column::Duration(b) => {
            let (s, n) = seconds_nanos(cx, segs, depth)?;
            b.append_value(micros_of(s, n, "Duration").map_err(|why| Fail { at: 0, why })?);
            Ok(())
        }
        Column::Wrapper(inner, _, kind) => {
            let kind = *kind;
            let buf = cx.buf;
            let mut value = (0u64, 0usize);
            for &(start, end) in segs {
                let mut p = start;
                while p < end {
                    let (number, wire) = key(buf, &mut p, end)?;
                    if number == 1 {
                        value = scalar(buf, &mut p, end, kind, wire, &|| "a wrapper's value (1)".to_string())?;
                    } else {
                        skip(buf, &mut p, end, number, wire, depth)?;
                    }
                }
            }
            append_scalar(inner, buf, value.0, value.1);
            Ok(())
        }
        _ => unreachable!("a message field has a message column"),
    }
}

/// A `Timestamp`'s or `Duration`'s `seconds` (1) and `nanos` (2).
fn seconds_nanos(cx: &Cx, segs: &[(usize, usize)], depth: u32) -> R<(i64, i32)> {
    let buf = cx.buf;
    let (mut seconds, mut nanos) = (0i64, 0i32);
    for &(start, end) in segs {
        let mut p = start;
        while p < end {
            let (number, wire) = key(buf, &mut p, end)?;
            match number {
                1 => seconds = scalar(buf, &mut p, end, Wire::Int64, wire, &|| "seconds (1)".to_string())?.0 as i64,
                2 => nanos = scalar(buf, &mut p, end, Wire::Int32, wire, &|| "nanos (2)".to_string())?.0 as u32 as i32,
                _ => skip(buf, &mut p, end, number, wire, depth)?,
            }
        }
    }
    Ok((seconds, nanos))
}

/// Whether every field of the message can be read by the plan (not: groups,
/// extensions); the answer for the slow path's `DynamicMessage`.
pub(super) fn supported(message: &prost_reflect::MessageDescriptor, seen: &mut Vec<String>) -> bool {
    if seen.iter().any(|n| n == message.full_name()) {
        return true;
    }
    seen.push(message.full_name().to_string());
    if message.extensions().len() > 0 {
        return false;
    }
    for field in message.fields() {
        if field.is_group() {
            return false;
        }
        if let Kind::Message(m) = field.kind() {
            if !supported(&m, seen) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests;
