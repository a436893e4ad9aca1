//! Records straight into Arrow columns, in the schema of Spark's Kafka source
//! (`KafkaRecordToRowConverter`): key binary, value binary, topic string,
//! partition int32, offset int64, timestamp timestamp[us, UTC],
//! timestampType int32, headers list<struct<key: string, value: binary>>.
//! Every field is nullable, as in Spark's schema.

use std::sync::{Arc, OnceLock};

use arrow_array::builder::make_view;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, Int32Array, Int64Array, ListArray, RecordBatch, RecordBatchOptions,
    StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::memory;
use crate::record::{RecordFields, RecordSink};

/// The header struct's fields: `key` string, `value` binary.
fn header_fields() -> Fields {
    Fields::from(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Binary, true),
    ])
}

fn headers_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Struct(header_fields()), true))
}

/// The output schema: Spark's Kafka source schema, with headers.
pub fn schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA.get_or_init(|| build_schema(DataType::Binary)).clone()
}

/// The schema of `binary_view` output: key and value are `binary_view`
/// columns referencing the input; everything else as [`schema`].
pub fn view_schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA.get_or_init(|| build_schema(DataType::BinaryView)).clone()
}

fn build_schema(key_value: DataType) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", key_value.clone(), true),
        Field::new("value", key_value, true),
        Field::new("topic", DataType::Utf8, true),
        Field::new("partition", DataType::Int32, true),
        Field::new("offset", DataType::Int64, true),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("timestampType", DataType::Int32, true),
        Field::new("headers", DataType::List(headers_item()), true),
    ]))
}

/// Which columns of [`schema`] a read builds: a bit per column, in schema
/// order. Columns left out are never built (no buffer is reserved or
/// written), so a `count()` or an `offset`-only read costs the walk and the
/// decode, not the copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Columns(u8);

impl Columns {
    pub const KEY: Columns = Columns(1);
    pub const VALUE: Columns = Columns(1 << 1);
    pub const TOPIC: Columns = Columns(1 << 2);
    pub const PARTITION: Columns = Columns(1 << 3);
    pub const OFFSET: Columns = Columns(1 << 4);
    pub const TIMESTAMP: Columns = Columns(1 << 5);
    pub const TIMESTAMP_TYPE: Columns = Columns(1 << 6);
    pub const HEADERS: Columns = Columns(1 << 7);
    /// Every column of [`schema`].
    pub const ALL: Columns = Columns(u8::MAX);
    /// No column: batches of rows only (`count()`).
    pub const NONE: Columns = Columns(0);
    /// The names of [`schema`]'s columns, in order (bit `i` is column `i`).
    pub const NAMES: [&'static str; 8] = [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ];

    /// The columns named (names of [`schema`], in any order); an unknown name
    /// is an error naming the columns there are.
    pub fn named<I, S>(names: I) -> Result<Columns, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut bits = 0u8;
        for name in names {
            let name = name.as_ref();
            match Self::NAMES.iter().position(|n| *n == name) {
                Some(i) => bits |= 1 << i,
                None => {
                    return Err(format!(
                        "no column {name:?}: the columns are {}",
                        Self::NAMES.join(", ")
                    ))
                }
            }
        }
        Ok(Columns(bits))
    }

    /// Whether every column of `other` is here.
    #[inline(always)]
    pub fn contains(self, other: Columns) -> bool {
        self.0 & other.0 == other.0
    }

    /// The columns of both.
    pub fn union(self, other: Columns) -> Columns {
        Columns(self.0 | other.0)
    }

    /// The names of these columns, in schema order.
    pub fn names(self) -> Vec<&'static str> {
        (0..8)
            .filter(|i| self.0 & (1 << i) != 0)
            .map(|i| Self::NAMES[i])
            .collect()
    }

    /// Where each column of [`schema`] here is, in schema order.
    fn indices(self) -> Vec<usize> {
        (0..8).filter(|i| self.0 & (1 << i) != 0).collect()
    }

    /// The position of `column` (one bit) among these columns, if it is one of them.
    pub fn position(self, column: Columns) -> Option<usize> {
        self.contains(column)
            .then(|| (self.0 & (column.0 - 1)).count_ones() as usize)
    }

    /// [`schema`] with these columns only.
    pub fn schema(self) -> SchemaRef {
        self.project(schema())
    }

    /// `full` (8 columns in [`schema`]'s order, e.g. [`view_schema`]) with these columns only.
    pub fn project(self, full: SchemaRef) -> SchemaRef {
        if self == Columns::ALL {
            return full;
        }
        Arc::new(
            full.project(&self.indices())
                .unwrap_or_else(|e| unreachable!("indices of 8 columns: {e}")),
        )
    }
}

impl Default for Columns {
    fn default() -> Self {
        Columns::ALL
    }
}

/// Validity that costs one branch until the first null: keys and values
/// are rarely null, so most columns never build a bitmap. The column's
/// length is passed in, so an all-valid column keeps no counter either.
#[derive(Debug, Default)]
struct LazyValidity {
    bitmap: Option<BooleanBufferBuilder>,
}

impl LazyValidity {
    /// Append one value's validity; `len` values came before it.
    #[inline(always)]
    fn append(&mut self, valid: bool, len: usize) {
        match &mut self.bitmap {
            None if valid => {}
            None => self.materialize(len).append(false),
            Some(bitmap) => bitmap.append(valid),
        }
    }

    #[cold]
    fn materialize(&mut self, len: usize) -> &mut BooleanBufferBuilder {
        let mut bitmap = BooleanBufferBuilder::new(len.max(1024));
        bitmap.append_n(len, true);
        self.bitmap.insert(bitmap)
    }

    fn truncate(&mut self, len: usize) {
        if let Some(bitmap) = &mut self.bitmap {
            bitmap.truncate(len);
        }
    }

    fn finish(&mut self) -> Option<NullBuffer> {
        self.bitmap
            .take()
            .map(|mut b| NullBuffer::new(b.finish()))
            .filter(|n| n.null_count() > 0)
    }
}

/// How far ahead of a column's end writes are prefetched: in bytes for
/// variable-width data, in rows for fixed-width columns. Measured on a 1.2 MB
/// fetch decoded 30 ms after the last call: 0.45 → 0.35 ms with input and
/// output prefetched (1-4 KiB ahead all did about as well), no change warm.
const WRITE_AHEAD_BYTES: usize = 2048;
const WRITE_AHEAD_ROWS: usize = 64;
/// Values this long or longer are not prefetched (see `BinaryColumn::push`).
const WRITE_AHEAD_MAX_VALUE: usize = 256;

/// A growing binary (or utf8) column: offsets, bytes, validity.
#[derive(Debug)]
struct BinaryColumn {
    offsets: Vec<i32>,
    data: Vec<u8>,
    valid: LazyValidity,
}

impl BinaryColumn {
    fn new() -> Self {
        BinaryColumn {
            offsets: vec![0],
            data: Vec::new(),
            valid: LazyValidity::default(),
        }
    }

    #[inline(always)]
    fn push(&mut self, bytes: Option<&[u8]>) {
        self.push_with::<true>(bytes);
    }

    /// `push`; with `PREFETCH`, also prefetch where later values go (the
    /// header columns are prefetched every 8th record instead, see
    /// `ColumnBuilder::prefetch_fixed_width`).
    #[inline(always)]
    fn push_with<const PREFETCH: bool>(&mut self, bytes: Option<&[u8]>) {
        if let Some(b) = bytes {
            // Only short values: the copy of a long one streams well on
            // its own, and prefetching beside it cost 1 KB values 21 %
            // (criterion, warm).
            if PREFETCH && b.len() < WRITE_AHEAD_MAX_VALUE {
                memory::prefetch_past(&self.data, WRITE_AHEAD_BYTES);
            }
            memory::extend_short(&mut self.data, b);
        }
        self.valid.append(bytes.is_some(), self.offsets.len() - 1);
        // Checked after each batch (`ColumnBuilder::overflowed`); truncation
        // here can only happen past i32::MAX bytes, which that reports.
        self.offsets.push(self.data.len() as i32);
    }

    /// Push a value of a column that never holds a null (header keys):
    /// no validity to track, no prefetch.
    #[inline(always)]
    fn push_present(&mut self, bytes: &[u8]) {
        debug_assert!(self.valid.bitmap.is_none(), "a never-null column got a null");
        memory::extend_short(&mut self.data, bytes);
        self.offsets.push(self.data.len() as i32);
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    fn mark(&self) -> (usize, usize) {
        (self.offsets.len(), self.data.len())
    }

    fn rollback(&mut self, (offsets, data): (usize, usize)) {
        self.offsets.truncate(offsets);
        self.data.truncate(data);
        self.valid.truncate(offsets - 1);
    }

    fn take(&mut self) -> (OffsetBuffer<i32>, Buffer, Option<NullBuffer>) {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let data = std::mem::take(&mut self.data);
        let nulls = self.valid.finish();
        (built_offsets(offsets, data.len()), memory::into_buffer(data), nulls)
    }

    fn finish_binary(&mut self) -> BinaryArray {
        let (offsets, data, nulls) = self.take();
        BinaryArray::new(offsets, data, nulls)
    }

    fn finish_utf8(&mut self) -> StringArray {
        let (offsets, data, nulls) = self.take();
        if data.is_ascii() {
            // SAFETY: ASCII bytes are UTF-8 and every byte starts a
            // character, so every offset (valid for the data, from `take`)
            // is a character boundary. Header keys almost always are ASCII;
            // this skips Arrow's check of each offset.
            return unsafe { StringArray::new_unchecked(offsets, data, nulls) };
        }
        // One validation for the whole column; only if some value is not
        // UTF-8 is each one decoded with replacement characters, as Kafka's
        // Java client decodes header keys.
        match StringArray::try_new(offsets.clone(), data.clone(), nulls.clone()) {
            Ok(array) => array,
            Err(_) => {
                let values = BinaryArray::new(offsets, data, nulls);
                values.iter().map(|v| v.map(String::from_utf8_lossy)).collect()
            }
        }
    }
}

/// Views into the input: Arrow buffers over it, at most 2 GiB each so
/// view offsets fit 32 bits. Window `k` starts at `k * VIEW_WINDOW` and is up
/// to twice that long, so a value no longer than `VIEW_WINDOW` lies wholly in
/// the window its first byte falls in.
#[derive(Debug, Clone)]
pub struct InputWindows {
    /// Address and length of the input.
    start: usize,
    len: usize,
    buffers: Vec<Buffer>,
}

const VIEW_WINDOW: usize = 1 << 30;

impl InputWindows {
    pub fn new(input: &Buffer) -> Self {
        let len = input.len();
        let buffers = (0..len.div_ceil(VIEW_WINDOW))
            .map(|k| input.slice_with_length(k * VIEW_WINDOW, (len - k * VIEW_WINDOW).min(2 * VIEW_WINDOW)))
            .collect();
        InputWindows {
            start: input.as_ptr().addr(),
            len,
            buffers,
        }
    }

    /// Buffer index and offset of `bytes` when they lie in the input.
    #[inline(always)]
    fn locate(&self, bytes: &[u8]) -> Option<(u32, u32)> {
        let at = bytes.as_ptr().addr().wrapping_sub(self.start);
        if at >= self.len || bytes.len() > VIEW_WINDOW || bytes.len() > self.len - at {
            return None;
        }
        Some(((at / VIEW_WINDOW) as u32, (at % VIEW_WINDOW) as u32))
    }
}

/// A `binary_view` column (Arrow's view layout: length, 4-byte prefix,
/// buffer index, offset; values of up to 12 bytes inline). Values inside the
/// input are referenced; others (from decompressed payloads, which are
/// reused between batches) are copied to `owned`, the buffer after the
/// input's windows.
#[derive(Debug, Default)]
struct ViewColumn {
    views: Vec<u128>,
    owned: Vec<u8>,
    valid: LazyValidity,
}

impl ViewColumn {
    #[inline(always)]
    fn push(&mut self, bytes: Option<&[u8]>, input: &InputWindows) {
        let view = match bytes {
            None => 0,
            Some(b) if b.len() <= 12 => make_view(b, 0, 0),
            Some(b) => match input.locate(b) {
                Some((index, offset)) => make_view(b, index, offset),
                None => {
                    // Offsets past u32 are caught by `overflowed` before the
                    // chunk is finished.
                    let offset = self.owned.len() as u32;
                    self.owned.extend_from_slice(b);
                    make_view(b, input.buffers.len() as u32, offset)
                }
            },
        };
        self.valid.append(bytes.is_some(), self.views.len());
        self.views.push(view);
    }

    fn mark(&self) -> (usize, usize) {
        (self.views.len(), self.owned.len())
    }

    fn rollback(&mut self, (views, owned): (usize, usize)) {
        self.views.truncate(views);
        self.owned.truncate(owned);
        self.valid.truncate(views);
    }

    fn finish(&mut self, input: &InputWindows) -> BinaryViewArray {
        let views = memory::into_scalars(std::mem::take(&mut self.views));
        let mut buffers = input.buffers.clone();
        buffers.push(memory::into_buffer(std::mem::take(&mut self.owned)));
        let nulls = self.valid.finish();
        if cfg!(debug_assertions) {
            return BinaryViewArray::try_new(views, buffers, nulls)
                .unwrap_or_else(|e| unreachable!("views lie in their buffers: {e}"));
        }
        // SAFETY: every view was made by `push` from a slice of one of these
        // buffers: `InputWindows::locate` gives the window holding the whole
        // slice and its offset there, and `owned` values were appended at the
        // offset their view names (a rollback truncates views and `owned`
        // together). Values of up to 12 bytes are inline. So each view's
        // buffer index, offset and length lie within its buffer and its
        // prefix is its value's first bytes. Arrow's check re-reads every
        // value's prefix from the input: it made binary_view output slower
        // than copying for 100-byte values (criterion none_100B 12.9 ms
        // against 10.5 ms).
        unsafe { BinaryViewArray::new_unchecked(views, buffers.into(), nulls) }
    }
}

/// Key and value columns: copied into `binary` columns (the default, what
/// Spark takes), or `binary_view` columns referencing the input.
#[derive(Debug)]
enum KeyValue {
    Copied {
        key: BinaryColumn,
        value: BinaryColumn,
    },
    Views {
        key: ViewColumn,
        value: ViewColumn,
        input: InputWindows,
    },
}

/// Offsets this module built: a leading 0, then the length of the column's
/// data (or child) after each push. Data only grows, except that a rollback
/// truncates offsets and data to one mark together, so every offset lies
/// between its predecessor and `end`, the final length. When `end` fits i32
/// each was stored exactly, and Arrow's check, which walks every offset
/// (~10 % of a 100-byte-record decode), is not needed. Past i32 the checked
/// constructor runs (`overflowed` keeps that from happening).
fn built_offsets(offsets: Vec<i32>, end: usize) -> OffsetBuffer<i32> {
    debug_assert!(offsets.first() == Some(&0) && offsets.windows(2).all(|w| w[0] <= w[1]));
    let offsets = memory::into_scalars(offsets);
    if end > i32::MAX as usize || offsets.is_empty() {
        return OffsetBuffer::new(offsets);
    }
    // SAFETY: non-empty, starting at 0 and never decreasing, as argued above.
    unsafe { OffsetBuffer::new_unchecked(offsets) }
}

/// Where a builder was before a batch, to undo a batch that turned out corrupt.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    rows: usize,
    key: (usize, usize),
    value: (usize, usize),
    header_rows: usize,
    header_key: (usize, usize),
    header_value: (usize, usize),
}

/// Key bytes per record reserved up front (longer keys grow the column).
const KEY_BYTES_GUESS: usize = 32;

/// Collects records into the columns of [`schema`].
#[derive(Debug)]
pub struct ColumnBuilder {
    kv: KeyValue,
    /// The columns built; the others are never written.
    columns: Columns,
    /// Records pushed since the last finish.
    rows: usize,
    offset: Vec<i64>,
    timestamp_us: Vec<i64>,
    timestamp_type: Vec<i32>,
    header_offsets: Vec<i32>,
    header_key: BinaryColumn,
    header_value: BinaryColumn,
    /// (records, bytes) last passed to `reserve`, for the header columns.
    header_room: (usize, usize),
    /// Header key and value bytes per record (in 1/256ths) of the last
    /// chunk finished with headers, if any.
    header_bytes: Option<(usize, usize)>,
}

impl Default for ColumnBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ColumnBuilder {
    /// Prefetch where the fixed-width columns will be written
    /// `WRITE_AHEAD_ROWS` rows on (one line of i64s holds 8 rows, so every
    /// 8th record calls this). See [`memory::prefetch`].
    #[inline(always)]
    fn prefetch_fixed_width(&self) {
        const AHEAD: usize = WRITE_AHEAD_ROWS;
        if self.columns != Columns::ALL {
            // a projection: prefetch only what is written
            self.prefetch_some();
            return;
        }
        memory::prefetch_past(&self.offset, AHEAD * 8);
        memory::prefetch_past(&self.timestamp_us, AHEAD * 8);
        memory::prefetch_past(&self.timestamp_type, AHEAD * 4);
        memory::prefetch_past(&self.header_offsets, AHEAD * 4);
        if let KeyValue::Copied { key, value } = &self.kv {
            memory::prefetch_past(&key.offsets, AHEAD * 4);
            memory::prefetch_past(&value.offsets, AHEAD * 4);
        }
        // Header columns, once they have room (a prefetch of an empty
        // vector's dangling address would walk the page tables for nothing).
        if self.headers_reserved() {
            memory::prefetch_past(&self.header_key.offsets, AHEAD * 4);
            memory::prefetch_past(&self.header_value.offsets, AHEAD * 4);
            memory::prefetch_past(&self.header_key.data, WRITE_AHEAD_BYTES);
            memory::prefetch_past(&self.header_value.data, WRITE_AHEAD_BYTES);
        }
    }

    /// [`prefetch_fixed_width`](Self::prefetch_fixed_width) of the columns built.
    #[cold]
    fn prefetch_some(&self) {
        const AHEAD: usize = WRITE_AHEAD_ROWS;
        let c = self.columns;
        if c.contains(Columns::OFFSET) {
            memory::prefetch_past(&self.offset, AHEAD * 8);
        }
        if c.contains(Columns::TIMESTAMP) {
            memory::prefetch_past(&self.timestamp_us, AHEAD * 8);
        }
        if c.contains(Columns::TIMESTAMP_TYPE) {
            memory::prefetch_past(&self.timestamp_type, AHEAD * 4);
        }
        if c.contains(Columns::HEADERS) {
            memory::prefetch_past(&self.header_offsets, AHEAD * 4);
        }
        if let KeyValue::Copied { key, value } = &self.kv {
            if c.contains(Columns::KEY) {
                memory::prefetch_past(&key.offsets, AHEAD * 4);
            }
            if c.contains(Columns::VALUE) {
                memory::prefetch_past(&value.offsets, AHEAD * 4);
            }
        }
    }

    pub fn new() -> Self {
        Self::with(KeyValue::Copied {
            key: BinaryColumn::new(),
            value: BinaryColumn::new(),
        })
    }

    /// A builder whose key and value columns are `binary_view`s referencing
    /// `input` (the buffer the records are decoded from) where they lie in it.
    pub fn with_views(input: InputWindows) -> Self {
        Self::with(KeyValue::Views {
            key: ViewColumn::default(),
            value: ViewColumn::default(),
            input,
        })
    }

    fn with(kv: KeyValue) -> Self {
        ColumnBuilder {
            kv,
            columns: Columns::ALL,
            rows: 0,
            offset: Vec::new(),
            timestamp_us: Vec::new(),
            timestamp_type: Vec::new(),
            header_offsets: vec![0],
            header_key: BinaryColumn::new(),
            header_value: BinaryColumn::new(),
            header_room: (0, 0),
            header_bytes: None,
        }
    }

    /// Build only `columns` (all by default): batches of [`Columns::schema`].
    pub fn with_columns(mut self, columns: Columns) -> Self {
        self.columns = columns;
        self
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Bytes held by the largest variable-size buffer (to cut chunks before
    /// Arrow's 32-bit offsets overflow).
    pub fn largest_buffer(&self) -> usize {
        let key_value = match &self.kv {
            KeyValue::Copied { key, value } => key.data.len().max(value.data.len()),
            KeyValue::Views { key, value, .. } => key.owned.len().max(value.owned.len()),
        };
        key_value
            .max(self.header_key.data.len())
            .max(self.header_value.data.len())
    }

    /// Whether a 32-bit offset overflowed: the chunk must be cut earlier.
    pub fn overflowed(&self) -> bool {
        self.largest_buffer() > i32::MAX as usize
    }

    /// Make room for about `records` more records of at most `bytes` key and
    /// value bytes. Room never touched costs no memory, so upper bounds are fine.
    pub fn reserve(&mut self, records: usize, bytes: usize) {
        let c = self.columns;
        if c.contains(Columns::OFFSET) {
            memory::reserve(&mut self.offset, records);
        }
        if c.contains(Columns::TIMESTAMP) {
            memory::reserve(&mut self.timestamp_us, records);
        }
        if c.contains(Columns::TIMESTAMP_TYPE) {
            memory::reserve(&mut self.timestamp_type, records);
        }
        if c.contains(Columns::HEADERS) {
            memory::reserve(&mut self.header_offsets, records);
        }
        let (with_key, with_value) = (c.contains(Columns::KEY), c.contains(Columns::VALUE));
        match &mut self.kv {
            KeyValue::Copied { key, value } => {
                if with_key {
                    memory::reserve(&mut key.offsets, records);
                    // Keys are short (ids, hashes): a guess per record, not the upper
                    // bound, so pooled key and value buffers keep their own sizes.
                    memory::reserve(&mut key.data, bytes.min(records.saturating_mul(KEY_BYTES_GUESS)));
                }
                if with_value {
                    memory::reserve(&mut value.offsets, records);
                    memory::reserve(&mut value.data, bytes);
                }
            }
            // Values outside the input (decompressed) grow `owned` as they come.
            KeyValue::Views { key, value, .. } => {
                if with_key {
                    memory::reserve(&mut key.views, records);
                }
                if with_value {
                    memory::reserve(&mut value.views, records);
                }
            }
        }
        self.header_room = (records, bytes);
    }

    /// Whether this chunk's header columns have room yet (`reserve_headers`
    /// ran): until then their offsets hold just the leading 0.
    #[inline(always)]
    fn headers_reserved(&self) -> bool {
        self.header_key.offsets.capacity() > 1
    }

    /// The first header of a chunk: room for two per record, and header
    /// bytes as the last chunk with headers had per record (an eighth more),
    /// or else up to the chunk's bytes, so the header columns seldom grow by
    /// copying. Not the chunk's bytes every time: the value column asks the
    /// pool for as much, and the two would swap buffers from chunk to chunk,
    /// the values faulting in their pages again each time.
    #[cold]
    fn reserve_headers(&mut self) {
        let (records, bytes) = self.header_room;
        let room = |per_record: Option<usize>, most: usize| {
            per_record.map_or(most, |n| memory::learnt_room(n, records, 4096, most))
        };
        memory::reserve(&mut self.header_key.offsets, records.saturating_mul(2));
        memory::reserve(&mut self.header_value.offsets, records.saturating_mul(2));
        memory::reserve(
            &mut self.header_key.data,
            room(self.header_bytes.map(|b| b.0), bytes / 2),
        );
        memory::reserve(&mut self.header_value.data, room(self.header_bytes.map(|b| b.1), bytes));
    }

    pub fn mark(&self) -> Mark {
        let (key, value) = match &self.kv {
            KeyValue::Copied { key, value } => (key.mark(), value.mark()),
            KeyValue::Views { key, value, .. } => (key.mark(), value.mark()),
        };
        Mark {
            rows: self.rows,
            key,
            value,
            header_rows: self.header_offsets.len(),
            header_key: self.header_key.mark(),
            header_value: self.header_value.mark(),
        }
    }

    /// Undo everything pushed since `mark`.
    pub fn rollback(&mut self, mark: Mark) {
        self.rows = mark.rows;
        self.offset.truncate(mark.rows);
        self.timestamp_us.truncate(mark.rows);
        self.timestamp_type.truncate(mark.rows);
        match &mut self.kv {
            KeyValue::Copied { key, value } => {
                key.rollback(mark.key);
                value.rollback(mark.value);
            }
            KeyValue::Views { key, value, .. } => {
                key.rollback(mark.key);
                value.rollback(mark.value);
            }
        }
        self.header_offsets.truncate(mark.header_rows);
        self.header_key.rollback(mark.header_key);
        self.header_value.rollback(mark.header_value);
    }

    /// Build record batches of everything pushed so far and start afresh:
    /// one, unless the topic column would pass i32 offsets (a long topic
    /// name times millions of rows), then as many as that takes.
    pub fn finish(&mut self, topic: Option<&str>, partition: Option<i32>) -> Vec<RecordBatch> {
        let rows = self.rows;
        if rows > 0 && self.headers_reserved() {
            self.header_bytes = Some((
                memory::per_row(self.header_key.data.len(), rows),
                memory::per_row(self.header_value.data.len(), rows),
            ));
        }
        self.finish_within(topic, partition, i32::MAX as usize)
    }

    /// [`finish`](Self::finish) with topic columns of at most `topic_bytes`.
    fn finish_within(&mut self, topic: Option<&str>, partition: Option<i32>, topic_bytes: usize) -> Vec<RecordBatch> {
        let rows = self.rows;
        let topic_at = self.columns.position(Columns::TOPIC);
        let piece = match topic_at {
            Some(_) => topic.map_or(usize::MAX, |t| (topic_bytes / t.len().max(1)).max(1)),
            None => usize::MAX,
        };
        if rows <= piece {
            let column = match (topic_at, topic) {
                (None, _) => StringArray::new_null(0), // not built
                (Some(_), Some(t)) => topic_column(t, rows),
                (Some(_), None) => StringArray::new_null(rows),
            };
            return vec![self.finish_with(Arc::new(column), partition)];
        }
        let (Some(t), Some(topic_at)) = (topic, topic_at) else {
            unreachable!("only a topic column limits the rows")
        };
        let whole = self.finish_with(Arc::new(StringArray::new_null(rows)), partition);
        (0..rows)
            .step_by(piece)
            .map(|start| {
                let part = whole.slice(start, piece.min(rows - start));
                let mut columns = part.columns().to_vec();
                columns[topic_at] = Arc::new(topic_column(t, part.num_rows()));
                RecordBatch::try_new(part.schema(), columns)
                    .unwrap_or_else(|e| unreachable!("same schema and rows: {e}"))
            })
            .collect()
    }

    fn finish_with(&mut self, topic: ArrayRef, partition: Option<i32>) -> RecordBatch {
        let rows = std::mem::take(&mut self.rows);
        let c = self.columns;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(8);
        let schema = match &mut self.kv {
            KeyValue::Copied { key, value } => {
                if c.contains(Columns::KEY) {
                    columns.push(Arc::new(key.finish_binary()));
                }
                if c.contains(Columns::VALUE) {
                    columns.push(Arc::new(value.finish_binary()));
                }
                schema()
            }
            KeyValue::Views { key, value, input } => {
                if c.contains(Columns::KEY) {
                    columns.push(Arc::new(key.finish(input)));
                }
                if c.contains(Columns::VALUE) {
                    columns.push(Arc::new(value.finish(input)));
                }
                view_schema()
            }
        };
        if c.contains(Columns::TOPIC) {
            columns.push(topic);
        }
        if c.contains(Columns::PARTITION) {
            columns.push(Arc::new(match partition {
                Some(p) => Int32Array::new(memory::into_scalars(memory::filled(p, rows)), None),
                None => Int32Array::new_null(rows),
            }));
        }
        if c.contains(Columns::OFFSET) {
            columns.push(Arc::new(Int64Array::new(
                memory::into_scalars(std::mem::take(&mut self.offset)),
                None,
            )));
        }
        if c.contains(Columns::TIMESTAMP) {
            columns.push(Arc::new(
                TimestampMicrosecondArray::new(memory::into_scalars(std::mem::take(&mut self.timestamp_us)), None)
                    .with_timezone("UTC"),
            ));
        }
        if c.contains(Columns::TIMESTAMP_TYPE) {
            columns.push(Arc::new(Int32Array::new(
                memory::into_scalars(std::mem::take(&mut self.timestamp_type)),
                None,
            )));
        }
        if c.contains(Columns::HEADERS) {
            let header_count = self.header_key.len();
            let header_struct = StructArray::new(
                header_fields(),
                vec![
                    Arc::new(self.header_key.finish_utf8()) as ArrayRef,
                    Arc::new(self.header_value.finish_binary()),
                ],
                None,
            );
            debug_assert_eq!(header_struct.len(), header_count);
            let header_offsets = built_offsets(std::mem::replace(&mut self.header_offsets, vec![0]), header_count);
            columns.push(Arc::new(ListArray::new(
                headers_item(),
                header_offsets,
                Arc::new(header_struct),
                None,
            )));
        }
        // The columns are built to the schema above, so this cannot fail.
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(c.project(schema), columns, &options)
            .unwrap_or_else(|e| unreachable!("columns match the schema: {e}"))
    }
}

/// `rows` copies of `t`, for `rows * t.len()` within i32 offsets.
fn topic_column(t: &str, rows: usize) -> StringArray {
    let total = rows * t.len();
    let mut offsets = memory::take_vec::<i32>(rows + 1);
    offsets.extend((0..=rows).map(|i| (i * t.len()) as i32));
    // The name once, then doubled: a few large copies.
    let mut bytes = memory::take_vec::<u8>(total);
    bytes.extend_from_slice(&t.as_bytes()[..t.len().min(total)]);
    while bytes.len() < total {
        bytes.extend_from_within(..bytes.len().min(total - bytes.len()));
    }
    let offsets = built_offsets(offsets, total);
    if total > i32::MAX as usize {
        return StringArray::new(offsets, memory::into_buffer(bytes), None);
    }
    // SAFETY: the bytes are `t` (a &str, so UTF-8) `rows` times over, and
    // value i spans [i * len, (i + 1) * len): one whole copy of `t`.
    unsafe { StringArray::new_unchecked(offsets, memory::into_buffer(bytes), None) }
}

/// An empty batch of the schema.
pub fn empty_batch() -> RecordBatch {
    RecordBatch::new_empty(schema())
}

/// An empty batch of the `binary_view` schema.
pub fn empty_view_batch() -> RecordBatch {
    RecordBatch::new_empty(view_schema())
}

impl RecordSink for ColumnBuilder {
    #[inline(always)]
    fn header(&mut self, key: &[u8], value: Option<&[u8]>) {
        if !self.columns.contains(Columns::HEADERS) {
            return;
        }
        if !self.headers_reserved() {
            self.reserve_headers();
        }
        self.header_key.push_present(key);
        self.header_value.push_with::<false>(value);
    }

    #[inline(always)]
    fn record(&mut self, r: &RecordFields) {
        if self.columns != Columns::ALL {
            self.record_some(r);
            return;
        }
        match &mut self.kv {
            KeyValue::Copied { key, value } => {
                key.push(r.key);
                value.push(r.value);
            }
            KeyValue::Views { key, value, input } => {
                key.push(r.key, input);
                value.push(r.value, input);
            }
        }
        if self.rows.is_multiple_of(8) {
            self.prefetch_fixed_width();
        }
        self.rows += 1;
        self.offset.push(r.offset);
        self.timestamp_us.push(r.timestamp.saturating_mul(1000));
        self.timestamp_type.push(r.timestamp_type as i32);
        self.header_offsets.push(self.header_key.len() as i32);
    }
}

impl ColumnBuilder {
    /// [`RecordSink::record`] into the columns built only (a projection).
    #[inline(always)]
    fn record_some(&mut self, r: &RecordFields) {
        let c = self.columns;
        let (with_key, with_value) = (c.contains(Columns::KEY), c.contains(Columns::VALUE));
        match &mut self.kv {
            KeyValue::Copied { key, value } => {
                if with_key {
                    key.push(r.key);
                }
                if with_value {
                    value.push(r.value);
                }
            }
            KeyValue::Views { key, value, input } => {
                if with_key {
                    key.push(r.key, input);
                }
                if with_value {
                    value.push(r.value, input);
                }
            }
        }
        if self.rows.is_multiple_of(8) {
            self.prefetch_fixed_width();
        }
        self.rows += 1;
        if c.contains(Columns::OFFSET) {
            self.offset.push(r.offset);
        }
        if c.contains(Columns::TIMESTAMP) {
            self.timestamp_us.push(r.timestamp.saturating_mul(1000));
        }
        if c.contains(Columns::TIMESTAMP_TYPE) {
            self.timestamp_type.push(r.timestamp_type as i32);
        }
        if c.contains(Columns::HEADERS) {
            self.header_offsets.push(self.header_key.len() as i32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(offset: i64, key: Option<&'static [u8]>, value: Option<&'static [u8]>) -> RecordFields<'static> {
        RecordFields {
            offset,
            timestamp: 5,
            timestamp_type: 0,
            key,
            value,
            sequence: -1,
            header_count: 0,
        }
    }

    #[test]
    fn builds_the_schema_with_nulls_and_headers() {
        let mut b = ColumnBuilder::new();
        b.record(&rec(0, None, Some(b"")));
        b.header(b"h", Some(b"1"));
        b.header(b"h", None);
        b.record(&rec(1, Some(b"k"), None));
        let batch = b.finish(Some("orders"), Some(3)).remove(0);
        assert_eq!(batch.schema(), schema());
        assert_eq!(batch.num_rows(), 2);
        let key = batch.column(0).as_any().downcast_ref::<BinaryArray>().expect("binary");
        assert!(key.is_null(0) && key.value(1) == b"k");
        let value = batch.column(1).as_any().downcast_ref::<BinaryArray>().expect("binary");
        assert!(value.is_valid(0) && value.value(0).is_empty() && value.is_null(1));
        let topic = batch.column(2).as_any().downcast_ref::<StringArray>().expect("utf8");
        assert_eq!((topic.value(0), topic.value(1)), ("orders", "orders"));
        let ts = batch
            .column(5)
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .expect("ts");
        assert_eq!(ts.value(0), 5_000);
        let headers = batch.column(7).as_any().downcast_ref::<ListArray>().expect("list");
        assert_eq!((headers.value_length(0), headers.value_length(1)), (0, 2));
        assert!(b.is_empty(), "finish starts afresh");
    }

    #[test]
    fn header_columns_are_sized_from_the_last_chunk_with_headers() {
        let mut b = ColumnBuilder::new();
        b.reserve(100, 8 << 20);
        for i in 0..100 {
            b.header(b"trace-id", Some(b"0123456789abcdef"));
            b.record(&rec(i, None, Some(b"v")));
        }
        // No chunk before: room for as much as the chunk may hold.
        assert!(b.header_value.data.capacity() >= 8 << 20);
        drop(b.finish(None, None));
        b.reserve(100, 8 << 20);
        b.header(b"trace-id", Some(b"0123456789abcdef"));
        // 16 value bytes a record: about 100 records' worth, not 8 MiB.
        let (keys, values) = (b.header_key.data.capacity(), b.header_value.data.capacity());
        assert!((1600..64 << 10).contains(&values), "{values}");
        assert!((800..64 << 10).contains(&keys), "{keys}");
        b.record(&rec(100, None, Some(b"v")));
        let batch = b.finish(None, None).remove(0);
        let headers = batch.column(7).as_any().downcast_ref::<ListArray>().expect("list");
        assert_eq!(headers.value_length(0), 1);
    }

    #[test]
    fn a_topic_column_past_its_offsets_splits_the_chunk() {
        let mut b = ColumnBuilder::new();
        for i in 0..10 {
            b.header(b"h", Some(b"x"));
            b.record(&rec(i, None, Some(b"v")));
        }
        // 4-byte topic, at most 12 bytes per column: pieces of 3 rows.
        let pieces = b.finish_within(Some("abcd"), Some(1), 12);
        assert_eq!(
            pieces.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(),
            [3, 3, 3, 1]
        );
        let mut offsets = Vec::new();
        for piece in &pieces {
            assert_eq!(piece.schema(), schema());
            let topic = piece.column(2).as_any().downcast_ref::<StringArray>().expect("utf8");
            assert!(topic.iter().all(|t| t == Some("abcd")) && topic.value_data().len() == 4 * piece.num_rows());
            let headers = piece.column(7).as_any().downcast_ref::<ListArray>().expect("list");
            assert!((0..piece.num_rows()).all(|i| headers.value_length(i) == 1));
            offsets.extend(
                piece
                    .column(4)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .expect("i64")
                    .values()
                    .iter()
                    .copied(),
            );
        }
        assert_eq!(offsets, (0..10).collect::<Vec<i64>>());
    }

    #[test]
    fn header_keys_that_are_not_utf8_get_replacement_characters() {
        let mut b = ColumnBuilder::new();
        b.header(b"ok", None);
        b.header(b"bad\xff", Some(b"v"));
        b.record(&rec(0, None, None));
        let batch = b.finish(None, None).remove(0);
        let headers = batch.column(7).as_any().downcast_ref::<ListArray>().expect("list");
        let keys = headers
            .values()
            .as_any()
            .downcast_ref::<StructArray>()
            .expect("struct")
            .column(0)
            .clone();
        let keys = keys.as_any().downcast_ref::<StringArray>().expect("utf8");
        assert_eq!((keys.value(0), keys.value(1)), ("ok", "bad\u{fffd}"));
    }

    #[test]
    fn columns_left_out_are_never_built() {
        let fill = |b: &mut ColumnBuilder| {
            b.reserve(4, 1000);
            b.header(b"h", Some(b"1"));
            b.record(&rec(7, Some(b"k"), Some(b"value")));
            let mark = b.mark();
            b.header(b"x", None);
            b.record(&rec(8, None, Some(b"gone")));
            b.rollback(mark);
            b.record(&rec(9, None, Some(b"v")));
        };
        let mut b = ColumnBuilder::new().with_columns(Columns::NONE);
        fill(&mut b);
        assert_eq!(b.len(), 2);
        assert_eq!(b.largest_buffer(), 0, "no key, value or header bytes");
        assert_eq!(
            (
                b.offset.capacity(),
                b.timestamp_us.capacity(),
                b.header_offsets.capacity()
            ),
            (0, 0, 1)
        );
        let batch = b.finish(Some("orders"), Some(3)).remove(0);
        assert_eq!((batch.num_rows(), batch.num_columns()), (2, 0));
        assert!(b.is_empty());

        let columns = Columns::named(["headers", "offset", "key"]).unwrap();
        assert_eq!(columns.names(), ["key", "offset", "headers"]);
        let mut b = ColumnBuilder::new().with_columns(columns);
        fill(&mut b);
        let batch = b.finish(Some("orders"), Some(3)).remove(0);
        assert_eq!(batch.schema(), columns.schema());
        let mut full = ColumnBuilder::new();
        fill(&mut full);
        let full = full.finish(Some("orders"), Some(3)).remove(0);
        for (here, there) in [(0, 0), (1, 4), (2, 7)] {
            assert_eq!(batch.column(here).as_ref(), full.column(there).as_ref(), "{here}");
        }
        assert_eq!(b.header_value.data.capacity(), 0, "header values not built");
        // a long topic splits a chunk only when the topic column is built
        let mut b = ColumnBuilder::new().with_columns(Columns::TOPIC.union(Columns::OFFSET));
        (0..10).for_each(|i| b.record(&rec(i, None, None)));
        assert_eq!(b.finish_within(Some("abcd"), None, 12).len(), 4);
        let mut b = ColumnBuilder::new().with_columns(Columns::OFFSET);
        (0..10).for_each(|i| b.record(&rec(i, None, None)));
        assert_eq!(b.finish_within(Some("abcd"), None, 12).len(), 1);
        assert_eq!(Columns::OFFSET.union(Columns::KEY).position(Columns::OFFSET), Some(1));
        assert_eq!(Columns::OFFSET.position(Columns::KEY), None);
    }

    #[test]
    fn rollback_undoes_a_batch() {
        let mut b = ColumnBuilder::new();
        b.record(&rec(0, Some(b"a"), Some(b"b")));
        let mark = b.mark();
        b.header(b"x", Some(b"y"));
        b.record(&rec(1, None, Some(b"zz")));
        b.header(b"dangling", None);
        b.rollback(mark);
        let batch = b.finish(None, None).remove(0);
        assert_eq!(batch.num_rows(), 1);
        let headers = batch.column(7).as_any().downcast_ref::<ListArray>().expect("list");
        assert_eq!(headers.values().len(), 0);
        assert!(batch.column(2).is_null(0));
    }
}
