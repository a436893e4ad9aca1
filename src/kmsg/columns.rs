//! Column builders for decoded messages: one per field, shaped by the
//! definitions, that can be cut back to an earlier length (a record that
//! fails half-way leaves nothing behind) and padded with nulls in bulk.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray, Float64Array, Int16Array, Int32Array, Int64Array,
    Int8Array, ListArray, StringArray, StructArray, UInt16Array, UInt32Array,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields};

use super::model::{FieldType, Prim, Registry};
use crate::memory;

/// The name of the list of unknown tagged fields on each flexible struct.
pub const UNKNOWN_TAGS: &str = "_unknown_tagged_fields";

/// The Arrow type of a field's values.
pub fn data_type(reg: &Registry, ty: &FieldType, flexible: bool) -> DataType {
    match ty {
        FieldType::Prim(p) => match p {
            Prim::Bool => DataType::Boolean,
            Prim::Int8 => DataType::Int8,
            Prim::Int16 => DataType::Int16,
            Prim::Uint16 => DataType::UInt16,
            Prim::Int32 => DataType::Int32,
            Prim::Uint32 => DataType::UInt32,
            Prim::Int64 => DataType::Int64,
            Prim::Float64 => DataType::Float64,
            Prim::String => DataType::Utf8,
            Prim::Uuid => DataType::FixedSizeBinary(16),
            Prim::Bytes | Prim::Records => DataType::Binary,
        },
        FieldType::Struct(s) => DataType::Struct(struct_fields(reg, *s, flexible)),
        FieldType::Array(inner) => DataType::List(Arc::new(Field::new("item", data_type(reg, inner, flexible), true))),
    }
}

fn unknown_tags_type() -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(Fields::from(vec![
            Field::new("tag", DataType::UInt32, false),
            Field::new("data", DataType::Binary, false),
        ])),
        true,
    )))
}

/// A field's column name: Kafka's `FieldSpec.camelCaseName()` (first letter
/// in lower case), the names its JSON converters and kafka-dump-log print.
pub fn camel_case(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The fields of a struct: its definition's fields in order, then the
/// unknown tagged fields when the message has flexible versions.
pub fn struct_fields(reg: &Registry, id: usize, flexible: bool) -> Fields {
    let mut fields: Vec<Field> = reg.structs[id]
        .fields
        .iter()
        .map(|f| Field::new(camel_case(&f.name), data_type(reg, &f.ty, flexible), true))
        .collect();
    if flexible {
        fields.push(Field::new(UNKNOWN_TAGS, unknown_tags_type(), true));
    }
    Fields::from(fields)
}

/// Validity of a column's values: Arrow's `NullBufferBuilder` behind a count
/// of valid values not yet appended to it, so that appending a valid value
/// (nearly every append) is one increment, whatever the compiler inlines.
#[derive(Debug)]
pub struct Nulls {
    /// Valid values after those of `inner`.
    tail: usize,
    inner: NullBufferBuilder,
}

impl Default for Nulls {
    fn default() -> Self {
        Nulls::new()
    }
}

impl Nulls {
    pub fn new() -> Nulls {
        Nulls {
            tail: 0,
            inner: NullBufferBuilder::new(0),
        }
    }
    #[inline]
    fn flush(&mut self) {
        if self.tail > 0 {
            self.inner.append_n_non_nulls(self.tail);
            self.tail = 0;
        }
    }
    #[inline(always)]
    pub fn append_non_null(&mut self) {
        self.tail += 1;
    }
    #[inline]
    pub fn append_n_non_nulls(&mut self, n: usize) {
        self.tail += n;
    }
    #[inline]
    pub fn append_null(&mut self) {
        self.flush();
        self.inner.append_null();
    }
    pub fn append_n_nulls(&mut self, n: usize) {
        self.flush();
        self.inner.append_n_nulls(n);
    }
    pub fn len(&self) -> usize {
        self.inner.len() + self.tail
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether value `i` is valid (values past the end count as valid).
    pub fn is_valid(&self, i: usize) -> bool {
        i >= self.inner.len() || self.inner.is_valid(i)
    }
    pub fn truncate(&mut self, n: usize) {
        let head = self.inner.len();
        if n >= head {
            self.tail = self.tail.min(n - head);
        } else {
            self.tail = 0;
            self.inner.truncate(n);
        }
    }
    pub fn finish(&mut self) -> Option<NullBuffer> {
        self.flush();
        self.inner.finish()
    }
}

#[cold]
#[inline(never)]
fn too_big(what: &str) -> String {
    what.to_string()
}

pub struct PrimCol<T> {
    pub vals: Vec<T>,
    pub nulls: Nulls,
}

impl<T: Default + Copy> PrimCol<T> {
    fn new() -> Self {
        PrimCol {
            vals: Vec::new(),
            nulls: Nulls::new(),
        }
    }
    #[inline(always)]
    pub fn push(&mut self, v: T) {
        self.vals.push(v);
        self.nulls.append_non_null();
    }
    /// Append `v` `n` times.
    pub fn push_n(&mut self, v: T, n: usize) {
        self.vals.resize(self.vals.len() + n, v);
        self.nulls.append_n_non_nulls(n);
    }
}

/// Variable-length values (UTF-8 or binary): offsets and bytes.
pub struct BinCol {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
    pub nulls: Nulls,
}

impl BinCol {
    fn new() -> Self {
        BinCol {
            offsets: vec![0],
            data: Vec::new(),
            nulls: Nulls::new(),
        }
    }
    /// Append a value; `Err` when the column would pass 2 GiB.
    #[inline(always)]
    pub fn push(&mut self, v: &[u8]) -> Result<(), String> {
        self.data.extend_from_slice(v);
        let Ok(end) = i32::try_from(self.data.len()) else {
            return Err(too_big("a column passed 2 GiB"));
        };
        self.offsets.push(end);
        self.nulls.append_non_null();
        Ok(())
    }
    /// `push` of `rest[..n]` (the value, then the bytes it was read from):
    /// a short value is moved as one or two fixed-size blocks of `rest`
    /// rather than by a call to `memcpy`. `Err` when `n > rest.len()` or
    /// the column would pass 2 GiB.
    #[inline(always)]
    pub fn push_prefix(&mut self, rest: &[u8], n: usize) -> Result<(), String> {
        if n > rest.len() {
            return Err(too_big("a value runs past its bytes"));
        }
        let start = self.data.len();
        let src = rest.as_ptr();
        // Moves of `w` bytes from `src + from` to the value's place + `to`.
        macro_rules! moves {
            ($w:literal, $($from:expr => $to:expr),+) => {{
                self.data.reserve(32);
                // SAFETY: `reserve(32)` left room for 32 bytes past `start`
                // and every move ends within `start + 32`; every read ends
                // within `rest` (the guards below); the bytes kept by
                // `set_len`, `start..start + n`, were all written with
                // `rest[..n]` (the moves cover `0..n`).
                unsafe {
                    let dst = self.data.as_mut_ptr().add(start);
                    $(std::ptr::copy_nonoverlapping(src.add($from), dst.add($to), $w);)+
                    self.data.set_len(start + n);
                }
            }};
        }
        match (n, rest.len()) {
            (0, _) => {}
            (..=16, 16..) => moves!(16, 0 => 0),
            (..=32, 32..) => moves!(32, 0 => 0),
            (17..=32, _) => moves!(16, 0 => 0, n - 16 => n - 16),
            (8..=15, _) => moves!(8, 0 => 0, n - 8 => n - 8),
            _ => self.data.extend_from_slice(&rest[..n]),
        }
        let Ok(end) = i32::try_from(self.data.len()) else {
            self.data.truncate(start);
            return Err(too_big("a column passed 2 GiB"));
        };
        self.offsets.push(end);
        self.nulls.append_non_null();
        Ok(())
    }
    fn end(&self) -> i32 {
        self.offsets.last().copied().unwrap_or(0)
    }
    /// Make the values text as Java decodes it: invalid UTF-8 becomes
    /// replacement characters. Strings are pushed as read and checked here,
    /// once per column: all ASCII (the usual case) in one pass over the
    /// bytes, else value by value. Should the replacements take the column
    /// past 2 GiB, the values from there on are null.
    pub fn make_text(&mut self) {
        if self.data.is_ascii() {
            return;
        }
        let n = self.offsets.len() - 1;
        fn value(c: &BinCol, i: usize) -> &[u8] {
            &c.data[c.offsets[i] as usize..c.offsets[i + 1] as usize]
        }
        if (0..n).all(|i| std::str::from_utf8(value(self, i)).is_ok()) {
            return;
        }
        let mut data = Vec::with_capacity(self.data.len());
        let mut offsets = Vec::with_capacity(self.offsets.len());
        offsets.push(0);
        let mut nulls = Nulls::new();
        for i in 0..n {
            let v = value(self, i);
            let before = data.len();
            match std::str::from_utf8(v) {
                Ok(_) => data.extend_from_slice(v),
                Err(_) => data.extend_from_slice(String::from_utf8_lossy(v).as_bytes()),
            }
            match i32::try_from(data.len()) {
                Ok(end) if self.nulls.is_valid(i) => {
                    offsets.push(end);
                    nulls.append_non_null();
                }
                _ => {
                    data.truncate(before);
                    offsets.push(before as i32);
                    nulls.append_null();
                }
            }
        }
        self.data = data;
        self.offsets = offsets;
        self.nulls = nulls;
    }

    /// An empty column with room for the offsets of `rows` values.
    pub fn with_rows(rows: usize) -> BinCol {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        BinCol {
            offsets,
            data: Vec::new(),
            nulls: Nulls::new(),
        }
    }
    /// Append `v` `n` times (a name repeated over a run of rows); when the
    /// column would pass 2 GiB, the run is null instead.
    pub fn push_n(&mut self, v: &[u8], n: usize) {
        let start = self.data.len();
        let fits = v
            .len()
            .checked_mul(n)
            .and_then(|total| total.checked_add(start))
            .is_some_and(|end| i32::try_from(end).is_ok());
        if !fits {
            return self.push_n_nulls(n);
        }
        // The bytes doubled copy by copy; the offsets counted up.
        let total = v.len() * n;
        self.data.reserve(total);
        if n > 0 {
            self.data.extend_from_slice(v);
        }
        while self.data.len() - start < total {
            let have = self.data.len() - start;
            self.data.extend_from_within(start..start + have.min(total - have));
        }
        // Within 2 GiB (checked above), so every offset fits.
        let len = v.len();
        self.offsets.extend((1..=n).map(|i| (start + i * len) as i32));
        self.nulls.append_n_non_nulls(n);
    }
    /// Append `n` nulls.
    pub fn push_n_nulls(&mut self, n: usize) {
        let end = self.end();
        self.offsets.resize(self.offsets.len() + n, end);
        self.nulls.append_n_nulls(n);
    }
}

pub struct ListCol {
    pub offsets: Vec<i32>,
    pub nulls: Nulls,
    pub child: Col,
    item: FieldRef,
}

impl ListCol {
    /// Close a list after its items were pushed to `child`.
    #[inline]
    pub fn close(&mut self) -> Result<(), String> {
        let Ok(end) = i32::try_from(self.child.len()) else {
            return Err(too_big("a list column passed 2^31 items"));
        };
        self.offsets.push(end);
        self.nulls.append_non_null();
        Ok(())
    }

    /// Close `n` empty lists (no items pushed since the last close).
    pub fn close_n_empty(&mut self, n: usize) -> Result<(), String> {
        let Ok(end) = i32::try_from(self.child.len()) else {
            return Err(too_big("a list column passed 2^31 items"));
        };
        self.offsets.resize(self.offsets.len() + n, end);
        self.nulls.append_n_non_nulls(n);
        Ok(())
    }
}

pub struct StructCol {
    pub children: Vec<Col>,
    pub nulls: Nulls,
    pub len: usize,
    pub fields: Fields,
    /// How to read this struct at each (definition, version) met so far
    /// (built once each; see `read::Plan`).
    pub(crate) plans: Vec<super::read::Plan>,
    /// The plan that read the last rows, when it left children behind
    /// (fields its version lacks): those lag `len`, their missing rows are
    /// null, and `sync` pads them.
    pub(crate) lazy: Option<usize>,
}

impl Col {
    /// Reserve room for `n` more values in this column (not in list items).
    pub fn reserve(&mut self, n: usize) {
        match self {
            Col::Bool(..) => {}
            Col::I8(c) => c.vals.reserve(n),
            Col::I16(c) => c.vals.reserve(n),
            Col::U16(c) => c.vals.reserve(n),
            Col::I32(c) => memory::reserve(&mut c.vals, n),
            Col::U32(c) => c.vals.reserve(n),
            Col::I64(c) => memory::reserve(&mut c.vals, n),
            Col::F64(c) => memory::reserve(&mut c.vals, n),
            Col::Uuid(c) => c.vals.reserve(n),
            Col::Str(c) | Col::Bin(c) => memory::reserve(&mut c.offsets, n),
            Col::List(c) => memory::reserve(&mut c.offsets, n),
            Col::Struct(c) => c.reserve(n),
        }
    }
}

impl StructCol {
    /// Reserve room for `n` more rows in every child (not in list items).
    pub fn reserve(&mut self, n: usize) {
        for c in &mut self.children {
            c.reserve(n);
        }
    }

    pub fn new(reg: &Registry, id: usize, flexible: bool) -> StructCol {
        let fields = struct_fields(reg, id, flexible);
        Self::from_fields(fields)
    }

    pub fn from_fields(fields: Fields) -> StructCol {
        let children = fields.iter().map(|f| Col::for_data_type(f.data_type())).collect();
        StructCol {
            children,
            nulls: Nulls::new(),
            len: 0,
            fields,
            plans: Vec::new(),
            lazy: None,
        }
    }

    /// Pad the children the last plan left behind with nulls up to `len`
    /// (before anything reads or writes them row by row).
    #[inline]
    pub fn sync(&mut self) {
        if let Some(p) = self.lazy.take() {
            let len = self.len;
            for &i in self.plans[p].lagging() {
                if let Some(c) = self.children.get_mut(i) {
                    let have = c.len();
                    if have < len {
                        c.append_nulls(len - have);
                    }
                }
            }
        }
    }

    /// `sync` this struct and every struct below it (the depth of the
    /// definitions, at most `model::MAX_DEPTH`).
    pub fn sync_deep(&mut self) {
        self.sync();
        for c in &mut self.children {
            match c {
                Col::Struct(s) => s.sync_deep(),
                Col::List(l) => {
                    if let Col::Struct(s) = &mut l.child {
                        s.sync_deep();
                    }
                }
                _ => {}
            }
        }
    }

    /// Mark one more row as present (its children were pushed).
    #[inline(always)]
    pub fn close(&mut self) {
        self.nulls.append_non_null();
        self.len += 1;
    }

    /// Mark `n` more rows as present (their children were pushed).
    #[inline]
    pub fn close_n(&mut self, n: usize) {
        self.nulls.append_n_non_nulls(n);
        self.len += n;
    }

    pub fn append_nulls(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        for c in &mut self.children {
            c.append_nulls(n);
        }
        self.nulls.append_n_nulls(n);
        self.len += n;
    }

    /// Cut back to `n` rows, children included (they may hold part of a
    /// row that was never closed).
    pub fn truncate(&mut self, n: usize) {
        for c in &mut self.children {
            c.truncate(n);
        }
        self.nulls.truncate(n);
        self.len = self.len.min(n);
    }

    pub fn data_type(&self) -> DataType {
        DataType::Struct(self.fields.clone())
    }

    pub fn finish(&mut self) -> StructArray {
        // The children a plan left behind are padded here (see `sync`); one
        // that holds no value at all (a field none of the rows' versions
        // has) is all nulls, over a shared zeroed buffer.
        self.lazy = None;
        let len = self.len;
        let mut zeros = None;
        let arrays: Vec<ArrayRef> = self
            .children
            .iter_mut()
            .zip(self.fields.iter())
            .map(|(c, f)| {
                let have = c.len();
                if have == 0 && len > 0 {
                    null_array(f.data_type(), len, zeros.get_or_insert_with(|| zeros_for(len)))
                } else {
                    if have < len {
                        c.append_nulls(len - have);
                    }
                    c.finish()
                }
            })
            .collect();
        let nulls = self.nulls.finish();
        self.len = 0;
        if arrays.is_empty() {
            StructArray::new_empty_fields(len, nulls)
        } else {
            StructArray::new(self.fields.clone(), arrays, nulls)
        }
    }
}

/// One column of decoded values.
pub enum Col {
    Bool(BooleanBufferBuilder, Nulls),
    I8(PrimCol<i8>),
    I16(PrimCol<i16>),
    U16(PrimCol<u16>),
    I32(PrimCol<i32>),
    U32(PrimCol<u32>),
    I64(PrimCol<i64>),
    F64(PrimCol<f64>),
    /// UUIDs: `fixed_size_binary(16)`.
    Uuid(PrimCol<[u8; 16]>),
    Str(BinCol),
    Bin(BinCol),
    List(Box<ListCol>),
    Struct(Box<StructCol>),
}

impl Col {
    pub fn for_data_type(dt: &DataType) -> Col {
        match dt {
            DataType::Boolean => Col::Bool(BooleanBufferBuilder::new(0), Nulls::new()),
            DataType::Int8 => Col::I8(PrimCol::new()),
            DataType::Int16 => Col::I16(PrimCol::new()),
            DataType::UInt16 => Col::U16(PrimCol::new()),
            DataType::Int32 => Col::I32(PrimCol::new()),
            DataType::UInt32 => Col::U32(PrimCol::new()),
            DataType::Int64 => Col::I64(PrimCol::new()),
            DataType::Float64 => Col::F64(PrimCol::new()),
            DataType::Utf8 => Col::Str(BinCol::new()),
            DataType::FixedSizeBinary(16) => Col::Uuid(PrimCol::new()),
            DataType::List(item) => Col::List(Box::new(ListCol {
                offsets: vec![0],
                nulls: Nulls::new(),
                child: Col::for_data_type(item.data_type()),
                item: item.clone(),
            })),
            DataType::Struct(fields) => Col::Struct(Box::new(StructCol::from_fields(fields.clone()))),
            // Binary, and anything else the definitions never produce.
            _ => Col::Bin(BinCol::new()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Col::Bool(v, _) => v.len(),
            Col::I8(c) => c.vals.len(),
            Col::I16(c) => c.vals.len(),
            Col::U16(c) => c.vals.len(),
            Col::I32(c) => c.vals.len(),
            Col::U32(c) => c.vals.len(),
            Col::I64(c) => c.vals.len(),
            Col::F64(c) => c.vals.len(),
            Col::Uuid(c) => c.vals.len(),
            Col::Str(c) | Col::Bin(c) => c.offsets.len() - 1,
            Col::List(c) => c.offsets.len() - 1,
            Col::Struct(c) => c.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether value `i` is null.
    pub fn is_null_at(&self, i: usize) -> bool {
        let nulls = match self {
            Col::Bool(_, n) => n,
            Col::I8(c) => &c.nulls,
            Col::I16(c) => &c.nulls,
            Col::U16(c) => &c.nulls,
            Col::I32(c) => &c.nulls,
            Col::U32(c) => &c.nulls,
            Col::I64(c) => &c.nulls,
            Col::F64(c) => &c.nulls,
            Col::Uuid(c) => &c.nulls,
            Col::Str(c) | Col::Bin(c) => &c.nulls,
            Col::List(c) => &c.nulls,
            Col::Struct(c) => &c.nulls,
        };
        !nulls.is_valid(i)
    }

    #[inline]
    pub fn push_null(&mut self) {
        macro_rules! prim {
            ($c:expr) => {{
                $c.vals.push(Default::default());
                $c.nulls.append_null();
            }};
        }
        match self {
            Col::I8(c) => prim!(c),
            Col::I16(c) => prim!(c),
            Col::U16(c) => prim!(c),
            Col::I32(c) => prim!(c),
            Col::U32(c) => prim!(c),
            Col::I64(c) => prim!(c),
            Col::F64(c) => prim!(c),
            Col::Uuid(c) => prim!(c),
            Col::Str(c) | Col::Bin(c) => {
                c.offsets.push(c.end());
                c.nulls.append_null();
            }
            Col::List(c) => {
                c.offsets.push(c.offsets.last().copied().unwrap_or(0));
                c.nulls.append_null();
            }
            _ => self.append_nulls(1),
        }
    }

    pub fn append_nulls(&mut self, n: usize) {
        macro_rules! prim {
            ($c:expr) => {{
                $c.vals.resize($c.vals.len() + n, Default::default());
                $c.nulls.append_n_nulls(n);
            }};
        }
        match self {
            Col::Bool(v, nulls) => {
                v.append_n(n, false);
                nulls.append_n_nulls(n);
            }
            Col::I8(c) => prim!(c),
            Col::I16(c) => prim!(c),
            Col::U16(c) => prim!(c),
            Col::I32(c) => prim!(c),
            Col::U32(c) => prim!(c),
            Col::I64(c) => prim!(c),
            Col::F64(c) => prim!(c),
            Col::Uuid(c) => prim!(c),
            Col::Str(c) | Col::Bin(c) => {
                let end = c.end();
                c.offsets.resize(c.offsets.len() + n, end);
                c.nulls.append_n_nulls(n);
            }
            Col::List(c) => {
                let end = c.offsets.last().copied().unwrap_or(0);
                c.offsets.resize(c.offsets.len() + n, end);
                c.nulls.append_n_nulls(n);
            }
            Col::Struct(c) => c.append_nulls(n),
        }
    }

    /// Cut back to `n` values (a no-op past the end), dropping list items
    /// and bytes beyond the last value kept.
    pub fn truncate(&mut self, n: usize) {
        macro_rules! prim {
            ($c:expr) => {{
                $c.vals.truncate(n);
                $c.nulls.truncate(n);
            }};
        }
        match self {
            Col::Bool(v, nulls) => {
                v.truncate(n);
                nulls.truncate(n);
            }
            Col::I8(c) => prim!(c),
            Col::I16(c) => prim!(c),
            Col::U16(c) => prim!(c),
            Col::I32(c) => prim!(c),
            Col::U32(c) => prim!(c),
            Col::I64(c) => prim!(c),
            Col::F64(c) => prim!(c),
            Col::Uuid(c) => prim!(c),
            Col::Str(c) | Col::Bin(c) => {
                c.offsets.truncate(n + 1);
                c.data.truncate(c.end() as usize);
                c.nulls.truncate(n);
            }
            Col::List(c) => {
                c.offsets.truncate(n + 1);
                let end = c.offsets.last().copied().unwrap_or(0) as usize;
                c.child.truncate(end);
                c.nulls.truncate(n);
            }
            Col::Struct(c) => c.truncate(n),
        }
    }

    pub fn finish(&mut self) -> ArrayRef {
        macro_rules! prim {
            ($arr:ty, $c:expr) => {{
                let vals = std::mem::take(&mut $c.vals);
                Arc::new(<$arr>::new(ScalarBuffer::from(vals), $c.nulls.finish())) as ArrayRef
            }};
        }
        // Large buffers go back to the pool when Arrow frees them (see `memory`).
        macro_rules! pooled {
            ($arr:ty, $c:expr) => {{
                let vals = std::mem::take(&mut $c.vals);
                Arc::new(<$arr>::new(memory::into_scalars(vals), $c.nulls.finish())) as ArrayRef
            }};
        }
        let offsets = |o: &mut Vec<i32>| OffsetBuffer::new(memory::into_scalars(std::mem::replace(o, vec![0])));
        match self {
            Col::Bool(v, nulls) => Arc::new(BooleanArray::new(v.finish(), nulls.finish())),
            Col::I8(c) => prim!(Int8Array, c),
            Col::I16(c) => prim!(Int16Array, c),
            Col::U16(c) => prim!(UInt16Array, c),
            Col::I32(c) => pooled!(Int32Array, c),
            Col::U32(c) => prim!(UInt32Array, c),
            Col::I64(c) => pooled!(Int64Array, c),
            Col::F64(c) => pooled!(Float64Array, c),
            Col::Uuid(c) => {
                let vals = std::mem::take(&mut c.vals);
                let bytes = Buffer::from_vec(vals.as_flattened().to_vec());
                Arc::new(FixedSizeBinaryArray::new(16, bytes, c.nulls.finish()))
            }
            Col::Str(c) => {
                c.make_text();
                let offsets = offsets(&mut c.offsets);
                let data = memory::into_buffer(std::mem::take(&mut c.data));
                // SAFETY: `make_text` just made every value UTF-8 (or null,
                // an empty value).
                Arc::new(unsafe { StringArray::new_unchecked(offsets, data, c.nulls.finish()) })
            }
            Col::Bin(c) => {
                let offsets = offsets(&mut c.offsets);
                let data = memory::into_buffer(std::mem::take(&mut c.data));
                Arc::new(BinaryArray::new(offsets, data, c.nulls.finish()))
            }
            Col::List(c) => {
                let offsets = offsets(&mut c.offsets);
                let child = c.child.finish();
                Arc::new(ListArray::new(c.item.clone(), offsets, child, c.nulls.finish()))
            }
            Col::Struct(c) => Arc::new(c.finish()),
        }
    }
}

/// What `null_array`s of `n` rows are made of: a zeroed buffer, 16-byte
/// aligned, the widest value (a UUID) times `n + 1`, from zeroed memory (no
/// writes), and the all-null validity over it (its nulls counted once).
pub struct Zeros {
    buf: Buffer,
    nulls: arrow_buffer::NullBuffer,
}

pub fn zeros_for(n: usize) -> Zeros {
    let buf = shared_zeros(n + 1);
    let nulls = arrow_buffer::NullBuffer::new(arrow_buffer::BooleanBuffer::new(buf.clone(), 0, n));
    Zeros { buf, nulls }
}

/// A zeroed buffer of at least `n` UUIDs' bytes: the last one made, while
/// large enough (the same rows decode after rows), else a new one, kept for
/// next time when at most `KEPT_ZEROS` bytes. Never written, so
/// sharing it between tables is sharing zeros.
fn shared_zeros(n: usize) -> Buffer {
    const KEPT_ZEROS: usize = 64 << 20;
    static LAST: std::sync::Mutex<Option<Buffer>> = std::sync::Mutex::new(None);
    let bytes = n.saturating_mul(16);
    let mut last = LAST.lock().ok();
    if let Some(b) = last.as_deref().and_then(Option::as_ref) {
        if b.len() >= bytes {
            return b.clone();
        }
    }
    let buf = Buffer::from_vec(vec![0u128; n]);
    if bytes <= KEPT_ZEROS {
        if let Some(last) = last.as_deref_mut() {
            *last = Some(buf.clone());
        }
    }
    buf
}

/// An all-null array of `dt` with `n` rows whose buffers are all slices of
/// one shared zeroed buffer (`zeros_for(n)`): a record type's column in a
/// chunk without a record of that type costs next to nothing.
pub fn null_array(dt: &DataType, n: usize, z: &Zeros) -> ArrayRef {
    use arrow_array::types::{Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type};
    use arrow_array::PrimitiveArray;
    use arrow_buffer::BooleanBuffer;
    let zeros = &z.buf;
    let nulls = Some(z.nulls.clone());
    macro_rules! prim {
        ($t:ty) => {
            Arc::new(PrimitiveArray::<$t>::new(
                ScalarBuffer::new(zeros.clone(), 0, n),
                nulls,
            )) as ArrayRef
        };
    }
    // SAFETY: all-zero offsets are non-decreasing and within any values buffer.
    let offsets = || unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::<i32>::new(zeros.clone(), 0, n + 1)) };
    match dt {
        DataType::Boolean => Arc::new(BooleanArray::new(BooleanBuffer::new(zeros.clone(), 0, n), nulls)),
        DataType::Int8 => prim!(Int8Type),
        DataType::Int16 => prim!(Int16Type),
        DataType::UInt16 => prim!(UInt16Type),
        DataType::Int32 => prim!(Int32Type),
        DataType::UInt32 => prim!(UInt32Type),
        DataType::Int64 => prim!(Int64Type),
        DataType::Float64 => prim!(Float64Type),
        DataType::FixedSizeBinary(16) => {
            Arc::new(FixedSizeBinaryArray::new(16, zeros.slice_with_length(0, n * 16), nulls))
        }
        // SAFETY: every value is empty, which is UTF-8.
        DataType::Utf8 => {
            Arc::new(unsafe { StringArray::new_unchecked(offsets(), Buffer::from_vec(Vec::<u8>::new()), nulls) })
        }
        DataType::Binary => Arc::new(BinaryArray::new(offsets(), Buffer::from_vec(Vec::<u8>::new()), nulls)),
        DataType::List(item) => Arc::new(ListArray::new(
            item.clone(),
            offsets(),
            arrow_array::new_empty_array(item.data_type()),
            nulls,
        )),
        DataType::Struct(fields) if fields.is_empty() => Arc::new(StructArray::new_empty_fields(n, nulls)),
        DataType::Struct(fields) => {
            let children = fields.iter().map(|f| null_array(f.data_type(), n, z)).collect();
            Arc::new(StructArray::new(fields.clone(), children, nulls))
        }
        other => arrow_array::new_null_array(other, n),
    }
}
