//! Typed values: a column of record values (or keys) parsed into Arrow.
//!
//! Each value is one document of a [`ValueFormat`]: UTF-8 text, one JSON
//! document (arrow-json, with Spark's `from_json` rules: see `spark_json`), or
//! one Avro datum (arrow-avro), plain or with the
//! Confluent Schema Registry prefix (magic byte 0, a 4-byte big-endian schema
//! id, then the payload). Nothing here knows about Kafka: the caller maps a
//! failing row back to its topic, partition and offset.
//!
//! The fast path feeds every value of a piece to one decoder and checks after
//! each that it made exactly one row. A failure there, or one only seen when
//! the decoder builds its arrays (a JSON type conflict), sends the piece to
//! `ValueFormat::parse_rows_one_by_one`: it bisects the rows with fresh decoders, in
//! a loop over a work list, so good rows around a bad one are kept and each
//! bad row gets its own reason.

pub mod headers;
mod json_fast;
pub mod protobuf;
pub mod registry;
mod spark_json;
pub mod spec;

pub use json_fast::without_fast_path;
pub(crate) use spark_json::write_json_string;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use arrow_array::builder::StringBuilder;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, LargeBinaryArray, LargeStringArray, StringArray, StringViewArray,
    StructArray, UInt32Array,
};
use arrow_avro::codec::Tz;
use arrow_avro::reader::{Decoder as AvroDecoder, DecoderMode, ReaderBuilder as AvroReaderBuilder};
use arrow_avro::schema::{AvroSchema, Fingerprint, FingerprintAlgorithm, SchemaStore};
use arrow_json::reader::{Decoder as JsonDecoder, ReaderBuilder as JsonReaderBuilder};
use arrow_schema::{DataType, Field, FieldRef};

/// The Confluent wire format's prefix: magic byte 0 and a 4-byte schema id.
pub const CONFLUENT_PREFIX_LEN: usize = 5;
/// Rows per piece of parallel work: big enough that a decoder's set-up is
/// noise, small enough that two cores share a fetch.
const PIECE_ROWS: usize = 16 * 1024;
/// Values parsed while decoding (`decode(value_format=...)`) are parsed a
/// chunk of about this many bytes at a time, as each is decoded: read back
/// from the core's cache, the buffer they leave written again by the next
/// chunk (see `decode::ChunkStep`), and the parsed columns of one chunk small
/// enough to come from malloc's heap, not fresh mappings. Measured on 90 MB
/// of JSON orders, one thread back to back: 1 MiB chunks 1,500 page faults
/// per call, 2 MiB 1,900, 4 MiB 6,600, 8 MiB 9-10k, 16 MiB 17-18k, and 2 MiB
/// the fastest on one and on two threads.
pub const PARSE_CHUNK_BYTES: usize = 2 << 20;

/// What a bad value becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnValueError {
    /// Stop at the first bad value and report it.
    Raise,
    /// The row's value becomes null (Spark's PERMISSIVE); the rest is kept.
    Null,
}

/// A value that could not be parsed: its row in the input and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowError {
    pub row: usize,
    pub reason: String,
}

/// How each value is parsed.
#[derive(Clone, Debug)]
pub enum ValueFormat {
    /// UTF-8 text, checked.
    Utf8,
    /// One JSON document per value, parsed into `field`'s type; `plan` is
    /// the schema-driven parser's, for the types it reads (see `json_fast`).
    Json {
        field: FieldRef,
        confluent: bool,
        plan: Option<Arc<json_fast::Plan>>,
    },
    /// Avro datums: plain datums of one schema (`framed: false`, the store
    /// holds that one schema), or Confluent-framed datums whose ids the store
    /// maps to writer schemas, each resolved to `reader`.
    Avro {
        store: SchemaStore,
        reader: AvroSchema,
        framed: bool,
        /// Writer schema ids the reader schema can't read, and why.
        unreadable: Arc<Vec<(u32, String)>>,
    },
    /// Protobuf messages, plain or Confluent-framed (see `protobuf`).
    Protobuf(protobuf::Protobuf),
}

impl ValueFormat {
    /// JSON documents of `data_type` (usually a struct), behind the
    /// Confluent prefix when `confluent`.
    pub fn json(data_type: DataType, confluent: bool) -> Result<Self, String> {
        let format = ValueFormat::Json {
            plan: json_fast::Plan::new(&data_type).map(Arc::new),
            field: Arc::new(Field::new("value", data_type, true)),
            confluent,
        };
        format.check()?;
        Ok(format)
    }

    /// Plain Avro datums of `schema` (Avro schema JSON).
    pub fn avro_plain(schema: &str) -> Result<Self, String> {
        let schema = AvroSchema::new(schema.to_string());
        let mut store = SchemaStore::new();
        store
            .register(schema.clone())
            .map_err(|e| format!("invalid Avro schema: {e}"))?;
        let format = ValueFormat::Avro {
            store,
            reader: schema,
            framed: false,
            unreadable: Arc::new(Vec::new()),
        };
        format.check()?;
        Ok(format)
    }

    /// Confluent-framed Avro: `writers` maps schema ids to writer schemas;
    /// values are read as `reader` (default: the writer schema of the highest id).
    pub fn avro_confluent(writers: &[(u32, String)], reader: Option<&str>) -> Result<Self, String> {
        let reader = match reader {
            Some(text) => AvroSchema::new(text.to_string()),
            None => {
                let newest = writers
                    .iter()
                    .max_by_key(|(id, _)| *id)
                    .ok_or("Confluent-framed Avro needs at least one writer schema")?;
                AvroSchema::new(newest.1.clone())
            }
        };
        // A registry subject may hold versions the reader schema can't read
        // (a breaking change under compatibility NONE): those ids are set
        // aside, and only values written with them fail.
        let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
        let mut unreadable = Vec::new();
        for (id, schema) in writers {
            let mut alone = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
            let schema = AvroSchema::new(schema.clone());
            alone
                .set(Fingerprint::Id(*id), schema.clone())
                .map_err(|e| format!("schema id {id}: {e}"))?;
            let one = ValueFormat::Avro {
                store: alone,
                reader: reader.clone(),
                framed: true,
                unreadable: Arc::new(Vec::new()),
            };
            match one.check() {
                Ok(()) => {
                    store
                        .set(Fingerprint::Id(*id), schema)
                        .map_err(|e| format!("schema id {id}: {e}"))?;
                }
                Err(reason) => unreadable.push((*id, reason)),
            }
        }
        if store.fingerprints().is_empty() {
            let reasons: Vec<String> = unreadable
                .iter()
                .map(|(id, r)| format!("schema id {id}: {r}"))
                .collect();
            return Err(format!(
                "no writer schema can be read as the reader schema ({})",
                reasons.join("; ")
            ));
        }
        Ok(ValueFormat::Avro {
            store,
            reader,
            framed: true,
            unreadable: Arc::new(unreadable),
        })
    }

    /// Build a decoder once, so a bad schema is an error before any work.
    fn check(&self) -> Result<(), String> {
        match self {
            ValueFormat::Utf8 => Ok(()),
            ValueFormat::Json { .. } => self.json_decoder(1).map(drop),
            ValueFormat::Avro { .. } => self.avro_decoder(1).map(drop),
            ValueFormat::Protobuf(format) => format.sink(0).map(drop),
        }
    }

    /// The Arrow type of the parsed column.
    pub fn data_type(&self) -> Result<DataType, String> {
        Ok(match self {
            ValueFormat::Utf8 => DataType::Utf8,
            ValueFormat::Json { field, .. } => field.data_type().clone(),
            ValueFormat::Avro { .. } => {
                without_metadata(&DataType::Struct(self.avro_decoder(1)?.schema().fields().clone()))
            }
            ValueFormat::Protobuf(format) => format.data_type()?,
        })
    }

    fn json_decoder(&self, rows: usize) -> Result<JsonDecoder, String> {
        let ValueFormat::Json { field, .. } = self else {
            unreachable!("json_decoder on a non-JSON format")
        };
        JsonReaderBuilder::new_with_field(field.clone())
            .with_batch_size(rows + 1)
            // Numbers, strings and nested values as Spark's from_json reads them.
            .with_decoder_factory(Arc::new(spark_json::SparkJson))
            .build_decoder()
            .map_err(|e| format!("cannot parse JSON into {}: {e}", field.data_type()))
    }

    fn avro_decoder(&self, rows: usize) -> Result<AvroDecoder, String> {
        let ValueFormat::Avro {
            store, reader, framed, ..
        } = self
        else {
            unreachable!("avro_decoder on a non-Avro format")
        };
        let mode = if *framed {
            DecoderMode::Framed
        } else {
            DecoderMode::UnframedDatum
        };
        AvroReaderBuilder::new()
            .with_writer_schema_store(store.clone())
            .with_reader_schema(reader.clone())
            .with_decoder_mode(mode)
            .with_batch_size(rows + 1)
            .with_tz(Tz::Utc)
            .build_decoder()
            .map_err(|e| format!("invalid Avro schema: {e}"))
    }

    /// A fresh decoder for `rows` values.
    fn sink(&self, rows: usize) -> Result<Sink, String> {
        Ok(match self {
            ValueFormat::Utf8 => Sink::Utf8(StringBuilder::with_capacity(rows, 0)),
            ValueFormat::Json { confluent, .. } => Sink::Json {
                decoder: self.json_decoder(rows)?,
                rows: 0,
                confluent: *confluent,
            },
            ValueFormat::Avro { framed, unreadable, .. } => Sink::Avro {
                decoder: self.avro_decoder(rows)?,
                rows: 0,
                framed: *framed,
                unreadable: unreadable.clone(),
                done: Vec::new(),
            },
            ValueFormat::Protobuf(format) => Sink::Protobuf(format.sink(rows)?),
        })
    }

    /// Parse one column of values; the result has the same length, null
    /// where the value is null (a tombstone) or, under [`OnValueError::Null`],
    /// bad. Row numbers in errors count from `first_row`.
    pub fn parse(&self, values: &dyn Array, first_row: usize, on_error: OnValueError) -> Result<ArrayRef, RowError> {
        let values = Values::of(values).map_err(|reason| RowError { row: first_row, reason })?;
        if let ValueFormat::Json { plan, confluent, .. } = self {
            // Types the schema-driven path reads go that way; see `json_fast`.
            if let Some(parsed) = json_fast::parse(plan.as_deref(), &values, first_row, on_error, *confluent)? {
                return Ok(parsed);
            }
        }
        let mut present: Vec<usize> = (0..values.len()).filter(|&i| values.get(i).is_some()).collect();
        let regrouped = self.group_by_writer(&values, &mut present);
        let (parsed, good) = match self.parse_rows(&values, &present, false) {
            Ok((Some(parsed), _)) => (parsed, present),
            _ => {
                let mut out = Parsed::default();
                // Regrouped rows are not in row order: the first bad row is the lowest of all.
                let stop_at_first = on_error == OnValueError::Raise && !regrouped;
                self.parse_rows_one_by_one(&values, &present, stop_at_first, &mut out);
                if let Some(bad) = out.bad.iter().min_by_key(|bad| bad.row) {
                    if on_error == OnValueError::Raise {
                        return Err(RowError {
                            row: first_row + bad.row,
                            reason: bad.reason.clone(),
                        });
                    }
                }
                let parsed = if out.arrays.is_empty() {
                    arrow_array::new_empty_array(
                        &self.data_type().map_err(|reason| RowError { row: first_row, reason })?,
                    )
                } else {
                    joined(out.arrays).map_err(|e| RowError {
                        row: first_row,
                        reason: e.to_string(),
                    })?
                };
                (parsed, out.good)
            }
        };
        if good.len() == values.len() && !regrouped {
            return Ok(parsed);
        }
        place(parsed, &good, values.len()).map_err(|e| RowError {
            row: first_row,
            reason: e.to_string(),
        })
    }

    /// Confluent-framed Avro of several writer schemas: `rows` sorted by
    /// writer id (stably; a value too short for an id first), so each id's
    /// values go through the decoder in one run. arrow-avro flushes its rows
    /// and switches its decoder at every change of writer schema, so values of
    /// two ids taken turn about (producers part-way through an upgrade) would
    /// cost a flush and a switch per value, over 100x the parse itself.
    /// `true` when it reordered them (the caller puts the rows back).
    fn group_by_writer(&self, values: &Values, rows: &mut [usize]) -> bool {
        if !matches!(self, ValueFormat::Avro { framed: true, .. }) {
            return false;
        }
        let id = |row: usize| values.get(row).and_then(|v| v.get(1..5));
        let first = rows.first().map(|&row| id(row));
        if rows.iter().all(|&row| Some(id(row)) == first) {
            return false;
        }
        rows.sort_by_key(|&row| id(row));
        true
    }

    /// Parse `rows` with one decoder; the error names the row that failed
    /// when that is known. When `careful`, each value is first checked as
    /// far as that leaves the decoder untouched ([`Sink::check`]); those that
    /// fail it are left out and listed (by their place in `rows`, with why),
    /// and the rest go on in the same decoder (`None`: every row failed so).
    fn parse_rows(&self, values: &Values, rows: &[usize], careful: bool) -> Result<Checked, (Option<usize>, String)> {
        #[cfg(test)]
        tests::ATTEMPTS.with(|a| a.set(a.get() + 1));
        // A decoder that panics on hostile bytes fails these rows, not the process.
        catch_unwind(AssertUnwindSafe(|| {
            let mut sink = self.sink(rows.len()).map_err(|e| (None, e))?;
            let mut skipped = Vec::new();
            for (i, &row) in rows.iter().enumerate() {
                let value = values.get(row).unwrap_or_default();
                if careful {
                    if let Err(reason) = sink.check(value) {
                        skipped.push((i, reason));
                        continue;
                    }
                }
                sink.push(value).map_err(|e| (Some(i), e))?;
            }
            if !rows.is_empty() && skipped.len() == rows.len() {
                return Ok((None, skipped));
            }
            Ok((Some(sink.finish().map_err(|e| (None, e))?), skipped))
        }))
        .unwrap_or_else(|_| Err((None, "the decoder panicked on this value".to_string())))
    }

    /// Parse `rows`, setting bad ones aside, in row order: a loop over a
    /// work list, never recursion, so its depth doesn't follow the number of
    /// bad rows. Each job tries a window of its rows with one decoder; a
    /// window that parses doubles the next, and after a bad row the next
    /// window starts at one row again, so a piece whose every row is bad
    /// costs one small decoder per row, never a decoder per row over the rest
    /// of the piece. On a failure at a known row, the rows before it are
    /// parsed again and the row stands alone; on an unknown one, the window
    /// is halved, or tried a row at a time once it is small. Under
    /// `stop_at_first` the first bad row (the lowest) ends the work.
    fn parse_rows_one_by_one(&self, values: &Values, rows: &[usize], stop_at_first: bool, out: &mut Parsed) {
        /// Below this many rows an unknown failure is found a row at a time.
        const SMALL: usize = 8;
        enum Job {
            /// Rows `lo..hi`, tried `window` at a time.
            Rows { lo: usize, hi: usize, window: usize },
            /// Row `rows[at]` failed after the jobs before it ran.
            Bad { at: usize, reason: String },
        }
        let mut work = vec![Job::Rows {
            lo: 0,
            hi: rows.len(),
            window: rows.len(),
        }];
        // Jobs are pushed last-first, so they run in row order.
        while let Some(job) = work.pop() {
            let (lo, hi, window) = match job {
                Job::Bad { at, reason } => {
                    out.bad.push(RowError { row: rows[at], reason });
                    if stop_at_first {
                        return;
                    }
                    continue;
                }
                Job::Rows { lo, hi, .. } if lo >= hi => continue,
                Job::Rows { lo, hi, window } => (lo, hi, window.clamp(1, hi - lo)),
            };
            let end = lo + window;
            match self.parse_rows(values, &rows[lo..end], true) {
                Ok((array, skipped)) => {
                    let mut skipped = skipped.into_iter().peekable();
                    for (i, &row) in rows[lo..end].iter().enumerate() {
                        match skipped.next_if(|(j, _)| *j == i) {
                            Some((_, reason)) => {
                                out.bad.push(RowError { row, reason });
                                if stop_at_first {
                                    return;
                                }
                            }
                            None => out.good.push(row),
                        }
                    }
                    out.arrays.extend(array);
                    work.push(Job::Rows {
                        lo: end,
                        hi,
                        window: window.saturating_mul(2),
                    });
                }
                Err((_, reason)) if window == 1 => {
                    work.push(Job::Rows { lo: end, hi, window: 1 });
                    work.push(Job::Bad { at: lo, reason });
                }
                Err((Some(i), reason)) => {
                    work.push(Job::Rows {
                        lo: lo + i + 1,
                        hi,
                        window: 1,
                    });
                    work.push(Job::Bad { at: lo + i, reason });
                    work.push(Job::Rows {
                        lo,
                        hi: lo + i,
                        window: i,
                    });
                }
                Err((None, _)) => {
                    work.push(Job::Rows { lo: end, hi, window: 1 });
                    if window <= SMALL {
                        work.push(Job::Rows { lo, hi: end, window: 1 });
                    } else {
                        let mid = lo + window / 2;
                        work.push(Job::Rows {
                            lo: mid,
                            hi: end,
                            window: end - mid,
                        });
                        work.push(Job::Rows {
                            lo,
                            hi: mid,
                            window: mid - lo,
                        });
                    }
                }
            }
        }
    }
}

/// `parsed` (one row per entry of `good`) spread over `len` rows: row
/// `good[i]` is `parsed[i]`, every other row null. A struct is rebuilt with
/// its own validity over children taken at a parsed row, since Arrow can't
/// take a null index from a union child (Avro `["null", "double", "string"]`).
fn place(parsed: ArrayRef, good: &[usize], len: usize) -> Result<ArrayRef, arrow_schema::ArrowError> {
    if good.is_empty() {
        return Ok(arrow_array::new_null_array(parsed.data_type(), len));
    }
    let mut slot: Vec<Option<u32>> = vec![None; len];
    for (i, &row) in good.iter().enumerate() {
        slot[row] = Some(i as u32);
    }
    if let Some(parsed) = parsed.as_any().downcast_ref::<StructArray>() {
        let valid = arrow_buffer::NullBuffer::from_iter(slot.iter().map(Option::is_some));
        let indices = UInt32Array::from_iter_values(slot.iter().map(|s| s.unwrap_or(0)));
        let taken = arrow_select::take::take(parsed, &indices, None)?;
        let taken = taken
            .as_any()
            .downcast_ref::<StructArray>()
            .expect("take keeps the type");
        let (fields, columns, nulls) = taken.clone().into_parts();
        let nulls = arrow_buffer::NullBuffer::union(nulls.as_ref(), Some(&valid));
        return Ok(Arc::new(StructArray::try_new(fields, columns, nulls)?));
    }
    arrow_select::take::take(parsed.as_ref(), &UInt32Array::from(slot), None)
}

/// What one decoder made of some rows: the array of those that parsed (none
/// when every one failed its check), and those left out, by their place in
/// the rows given, with why.
type Checked = (Option<ArrayRef>, Vec<(usize, String)>);

/// Rows parsed apart, in row order.
#[derive(Default)]
struct Parsed {
    arrays: Vec<ArrayRef>,
    good: Vec<usize>,
    bad: Vec<RowError>,
}

/// A decoder being fed one value at a time.
enum Sink {
    Utf8(StringBuilder),
    Json {
        decoder: JsonDecoder,
        rows: usize,
        confluent: bool,
    },
    Avro {
        decoder: AvroDecoder,
        rows: usize,
        framed: bool,
        unreadable: Arc<Vec<(u32, String)>>,
        /// Rows flushed when the writer schema changed mid-piece.
        done: Vec<ArrayRef>,
    },
    Protobuf(protobuf::Sink),
}

impl Sink {
    /// Check `value` as far as that touches no decoder state: an error here
    /// leaves the sink as it was, so the values after it can go on in it
    /// (`Ok` when only pushing can tell).
    fn check(&mut self, value: &[u8]) -> Result<(), String> {
        match self {
            Sink::Utf8(_) => std::str::from_utf8(value)
                .map(drop)
                .map_err(|e| format!("not UTF-8: {e}")),
            Sink::Json { confluent, .. } => {
                let document = if *confluent { strip_confluent(value)? } else { value };
                json_fast::check_grammar(document)
            }
            Sink::Avro { framed, .. } => avro_frame(value, *framed),
            Sink::Protobuf(sink) => sink.check(value),
        }
    }

    fn push(&mut self, value: &[u8]) -> Result<(), String> {
        match self {
            Sink::Utf8(builder) => {
                let text = std::str::from_utf8(value).map_err(|e| format!("not UTF-8: {e}"))?;
                builder.append_value(text);
                Ok(())
            }
            Sink::Json {
                decoder,
                rows,
                confluent,
            } => {
                let document = if *confluent { strip_confluent(value)? } else { value };
                json_fast::check_grammar(document)?;
                let document = astral_unescaped(document);
                decoder.decode(&document).map_err(|e| format!("malformed JSON: {e}"))?;
                // A separator ends a trailing number or literal; an object, array
                // or string ends itself (nearly every value: one call saved).
                if !matches!(document.last(), Some(b'}' | b']' | b'"')) {
                    decoder.decode(b"\n").map_err(|e| format!("malformed JSON: {e}"))?;
                }
                *rows += 1;
                if decoder.has_partial_record() {
                    return Err("malformed JSON: the document is incomplete".into());
                }
                match decoder.len() {
                    n if n == *rows => Ok(()),
                    n if n < *rows => Err("empty value: no JSON document".into()),
                    _ => Err("more than one JSON document in the value".into()),
                }
            }
            Sink::Avro {
                decoder,
                rows,
                framed,
                unreadable,
                done,
            } => {
                avro_frame(value, *framed)?;
                let mut rest = value;
                loop {
                    let used = decoder
                        .decode(rest)
                        .map_err(|e| avro_reason(&e.to_string(), value, *framed, unreadable))?;
                    rest = &rest[used..];
                    if rest.is_empty() || !decoder.batch_is_full() {
                        break;
                    }
                    // A new writer schema: arrow-avro flushes the rows of the
                    // old one before it reads on.
                    if let Some(batch) = decoder.flush().map_err(|e| e.to_string())? {
                        done.push(Arc::new(StructArray::from(batch)));
                    }
                }
                *rows += 1;
                let pending = decoder.batch_size() - decoder.capacity();
                let flushed: usize = done.iter().map(|a| a.len()).sum();
                if !rest.is_empty() || pending + flushed != *rows {
                    return Err(format!(
                        "truncated Avro datum: {} bytes do not hold a whole datum of the schema",
                        value.len()
                    ));
                }
                Ok(())
            }
            Sink::Protobuf(sink) => sink.push(value),
        }
    }

    fn finish(self) -> Result<ArrayRef, String> {
        match self {
            Sink::Utf8(mut builder) => Ok(Arc::new(builder.finish())),
            Sink::Protobuf(sink) => sink.finish(),
            Sink::Json { mut decoder, .. } => {
                let batch = decoder
                    .flush()
                    .map_err(|e| format!("JSON value does not fit the schema: {e}"))?;
                match batch {
                    Some(batch) => Ok(batch.column(0).clone()),
                    None => Err("no rows".into()),
                }
            }
            Sink::Avro {
                mut decoder, mut done, ..
            } => {
                if let Some(batch) = decoder.flush().map_err(|e| e.to_string())? {
                    done.push(Arc::new(StructArray::from(batch)));
                }
                // Writer schemas resolve to the same types with different
                // field metadata (defaults, names); one type for all.
                let done: Vec<ArrayRef> = done
                    .into_iter()
                    .map(|a| {
                        let target = without_metadata(a.data_type());
                        retyped(a.to_data(), &target).map(arrow_array::make_array)
                    })
                    .collect::<Result<_, _>>()
                    .map_err(|e| e.to_string())?;
                if done.is_empty() {
                    return Err("no rows".into());
                }
                joined(done).map_err(|e| e.to_string())
            }
        }
    }
}

/// A Confluent-framed Avro value's prefix, checked (nothing to check when
/// not `framed`).
fn avro_frame(value: &[u8], framed: bool) -> Result<(), String> {
    if framed && value.len() < CONFLUENT_PREFIX_LEN {
        return Err(format!(
            "{} bytes: shorter than the Confluent prefix (magic byte 0 and a 4-byte schema id)",
            value.len()
        ));
    }
    if framed && value[0] != 0 {
        return Err(format!(
            "magic byte {} where the Confluent prefix has 0 (not Schema Registry framing)",
            value[0]
        ));
    }
    Ok(())
}

/// One array of `arrays` (at least one), in order; a lone array is not copied.
fn joined(mut arrays: Vec<ArrayRef>) -> Result<ArrayRef, arrow_schema::ArrowError> {
    if arrays.len() == 1 {
        return Ok(arrays.pop().expect("one array"));
    }
    let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
    arrow_select::concat::concat(&refs)
}

/// `data_type` with the metadata of every field, at any depth, left out.
fn without_metadata(data_type: &DataType) -> DataType {
    let field =
        |f: &FieldRef| -> FieldRef { Arc::new(Field::new(f.name(), without_metadata(f.data_type()), f.is_nullable())) };
    match data_type {
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(field).collect()),
        DataType::List(f) => DataType::List(field(f)),
        DataType::LargeList(f) => DataType::LargeList(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::Map(f, sorted) => DataType::Map(field(f), *sorted),
        DataType::Union(fields, mode) => DataType::Union(
            arrow_schema::UnionFields::try_new(fields.iter().map(|(id, _)| id), fields.iter().map(|(_, f)| field(f)))
                .expect("the type ids of a valid union"),
            *mode,
        ),
        DataType::Dictionary(k, v) => DataType::Dictionary(k.clone(), Box::new(without_metadata(v))),
        other => other.clone(),
    }
}

/// `data` as `target`, a type of the same layout that differs only in field metadata.
fn retyped(data: arrow_data::ArrayData, target: &DataType) -> Result<arrow_data::ArrayData, arrow_schema::ArrowError> {
    if data.data_type() == target {
        return Ok(data);
    }
    let child_types: Vec<DataType> = match target {
        DataType::Struct(fields) => fields.iter().map(|f| f.data_type().clone()).collect(),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) | DataType::Map(f, _) => {
            vec![f.data_type().clone()]
        }
        DataType::Union(fields, _) => fields.iter().map(|(_, f)| f.data_type().clone()).collect(),
        _ => Vec::new(),
    };
    let children = data
        .child_data()
        .iter()
        .zip(child_types.iter().chain(std::iter::repeat(&DataType::Null)))
        .map(|(child, t)| {
            if *t == DataType::Null {
                Ok(child.clone())
            } else {
                retyped(child.clone(), t)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    data.into_builder()
        .data_type(target.clone())
        .child_data(children)
        .build()
}

/// The JSON document behind a Confluent prefix.
fn strip_confluent(value: &[u8]) -> Result<&[u8], String> {
    match value {
        [0, _, _, _, _, rest @ ..] => Ok(rest),
        [magic, ..] if *magic != 0 => Err(format!(
            "magic byte {magic} where the Confluent prefix has 0 (not Schema Registry framing)"
        )),
        _ => Err(format!(
            "{} bytes: shorter than the Confluent prefix (magic byte 0 and a 4-byte schema id)",
            value.len()
        )),
    }
}

/// `document` with every escaped UTF-16 surrogate pair (`\\uD840\\uDC00`)
/// written as the UTF-8 of its character. arrow-json 60 joins the halves
/// with `|` where `+` is needed, so characters past U+1FFFF (CJK extension B
/// and up, as `json.dumps` escapes them) come out wrong; a JSON string may
/// hold any character unescaped (RFC 8259 §7), so this changes no meaning.
/// Documents without `\\u` (nearly all) are not copied.
fn astral_unescaped(document: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    let Some(first) = memchr::memmem::find(document, b"\\u") else {
        return Cow::Borrowed(document);
    };
    let hex = |at: usize| -> Option<u32> {
        let digits = document.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let mut out = Vec::with_capacity(document.len());
    // Walk escapes from the last byte that can't be inside one: `first` may
    // be the tail of an escaped backslash, so start at the run of backslashes.
    let mut i = document[..first].iter().rposition(|&b| b != b'\\').map_or(0, |p| p + 1);
    out.extend_from_slice(&document[..i]);
    while i < document.len() {
        if document[i] != b'\\' {
            out.push(document[i]);
            i += 1;
            continue;
        }
        if document.get(i + 1) == Some(&b'u') {
            if let (Some(high @ 0xD800..=0xDBFF), Some(b'\\'), Some(b'u'), Some(low @ 0xDC00..=0xDFFF)) =
                (hex(i + 2), document.get(i + 6), document.get(i + 7), hex(i + 8))
            {
                let c = char::from_u32(0x1_0000 + ((high - 0xD800) << 10) + (low - 0xDC00)).expect("a valid pair");
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                i += 12;
                continue;
            }
        }
        // Any other escape is copied whole (two bytes; `\\u` digits follow as text).
        out.extend_from_slice(&document[i..(i + 2).min(document.len())]);
        i += 2;
    }
    Cow::Owned(out)
}

/// An arrow-avro error in words a user can act on.
fn avro_reason(error: &str, value: &[u8], framed: bool, unreadable: &[(u32, String)]) -> String {
    if framed && error.contains("Unknown fingerprint") {
        let id = u32::from_be_bytes([value[1], value[2], value[3], value[4]]);
        if let Some((_, why)) = unreadable.iter().find(|(bad, _)| *bad == id) {
            return format!("schema id {id} can't be read as the reader schema: {why}");
        }
        return format!("unknown schema id {id}: no writer schema was given for it");
    }
    if error.contains("EOF") || error.contains("eof") || error.contains("Unexpected") || error.contains("varint") {
        return format!("truncated or corrupt Avro datum ({} bytes): {error}", value.len());
    }
    format!("bad Avro datum: {error}")
}

/// A column of values of any binary or string type, read as bytes.
enum Values<'a> {
    Binary(&'a BinaryArray),
    LargeBinary(&'a LargeBinaryArray),
    BinaryView(&'a BinaryViewArray),
    Utf8(&'a StringArray),
    LargeUtf8(&'a LargeStringArray),
    Utf8View(&'a StringViewArray),
}

impl<'a> Values<'a> {
    fn of(array: &'a dyn Array) -> Result<Self, String> {
        let any = array.as_any();
        macro_rules! try_as {
            ($($variant:ident => $ty:ty),*) => {
                $(if let Some(a) = any.downcast_ref::<$ty>() { return Ok(Values::$variant(a)); })*
            };
        }
        try_as!(Binary => BinaryArray, LargeBinary => LargeBinaryArray, BinaryView => BinaryViewArray,
            Utf8 => StringArray, LargeUtf8 => LargeStringArray, Utf8View => StringViewArray);
        Err(format!(
            "values must be a binary or string column, not {}",
            array.data_type()
        ))
    }

    fn len(&self) -> usize {
        match self {
            Values::Binary(a) => a.len(),
            Values::LargeBinary(a) => a.len(),
            Values::BinaryView(a) => a.len(),
            Values::Utf8(a) => a.len(),
            Values::LargeUtf8(a) => a.len(),
            Values::Utf8View(a) => a.len(),
        }
    }

    fn get(&self, i: usize) -> Option<&'a [u8]> {
        macro_rules! at {
            ($a:expr, $value:expr) => {
                if $a.is_null(i) {
                    None
                } else {
                    Some($value)
                }
            };
        }
        match self {
            Values::Binary(a) => at!(a, a.value(i)),
            Values::LargeBinary(a) => at!(a, a.value(i)),
            Values::BinaryView(a) => at!(a, a.value(i)),
            Values::Utf8(a) => at!(a, a.value(i).as_bytes()),
            Values::LargeUtf8(a) => at!(a, a.value(i).as_bytes()),
            Values::Utf8View(a) => at!(a, a.value(i).as_bytes()),
        }
    }
}

/// Parse every array of a column on up to `threads` threads (0: one per
/// core), in pieces of `PIECE_ROWS` rows; the result has the input's chunking
/// split at piece boundaries, in order. Row numbers in errors count over the
/// whole column; the first bad row wins, as in a sequential parse.
pub fn parse_column(
    format: &ValueFormat,
    arrays: &[ArrayRef],
    on_error: OnValueError,
    threads: usize,
) -> Result<Vec<ArrayRef>, RowError> {
    let mut pieces: Vec<(ArrayRef, usize)> = Vec::new();
    let mut first_row = 0;
    for array in arrays {
        let mut start = 0;
        while start < array.len() {
            let len = PIECE_ROWS.min(array.len() - start);
            pieces.push((array.slice(start, len), first_row + start));
            start += len;
        }
        first_row += array.len();
    }
    let threads = if threads == 0 {
        crate::parallel::cores()
    } else {
        threads
    }
    .clamp(1, pieces.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<ArrayRef, RowError>>>> = Mutex::new(vec![None; pieces.len()]);
    let work = || loop {
        let i = next.fetch_add(1, Relaxed);
        let Some((piece, first_row)) = pieces.get(i) else {
            return;
        };
        let result = format.parse(piece.as_ref(), *first_row, on_error);
        results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
    };
    if threads > 1 {
        if !crate::parallel::run_beside(threads - 1, &work) {
            return Err(RowError {
                row: 0,
                reason: "a parsing thread panicked".into(),
            });
        }
    } else {
        work();
    }
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.into_iter().map(|r| r.expect("every piece is parsed")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;

    thread_local! {
        /// Decoders `parse_rows` made on this thread.
        pub(super) static ATTEMPTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn binary(values: &[Option<&[u8]>]) -> ArrayRef {
        Arc::new(BinaryArray::from(values.to_vec()))
    }

    fn json_format() -> ValueFormat {
        let fields = vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ];
        ValueFormat::json(DataType::Struct(fields.into()), false).unwrap()
    }

    #[test]
    fn json_documents_become_struct_rows_and_tombstones_stay_null() {
        let values = binary(&[Some(br#"{"a": 1, "b": "x"}"#), None, Some(br#"{"a": 2, "c": 3}"#)]);
        let out = json_format().parse(values.as_ref(), 0, OnValueError::Raise).unwrap();
        let out = out.as_struct();
        assert_eq!(out.len(), 3);
        assert!(out.is_null(1));
        let a = out.column(0).as_primitive::<Int64Type>();
        assert_eq!((a.value(0), a.value(2)), (1, 2));
        assert!(out.column(1).is_null(2), "a field missing from the document is null");
    }

    #[test]
    fn a_bad_json_value_names_its_row_or_becomes_null() {
        let values = binary(&[
            Some(br#"{"a": 1}"#),
            Some(br#"{"a": "#),
            Some(br#"{"a": 3}"#),
            Some(br#"{"a": "seven"}"#),
            Some(b"1 2"),
        ]);
        let err = json_format()
            .parse(values.as_ref(), 10, OnValueError::Raise)
            .unwrap_err();
        assert_eq!(err.row, 11);
        let out = json_format().parse(values.as_ref(), 0, OnValueError::Null).unwrap();
        let nulls: Vec<bool> = (0..5).map(|i| out.is_null(i)).collect();
        assert_eq!(nulls, [false, true, false, true, true]);
        let a = out.as_struct().column(0).as_primitive::<Int64Type>();
        assert_eq!((a.value(0), a.value(2)), (1, 3));
    }

    #[test]
    fn escaped_surrogate_pairs_past_the_first_plane_decode_right() {
        let format = ValueFormat::json(DataType::Utf8, false).unwrap();
        let values = binary(&[
            Some(br#""\ud840\udc00""#),
            Some(br#""\\ud840 \\\ud840\udc00""#),
            Some(br#""\ud83d\ude00 \u00e9""#),
        ]);
        let out = format.parse(values.as_ref(), 0, OnValueError::Raise).unwrap();
        let out = out.as_string::<i32>();
        assert_eq!(out.value(0), "\u{20000}");
        assert_eq!(
            out.value(1),
            "\\ud840 \\\u{20000}",
            "an escaped backslash starts no escape"
        );
        assert_eq!(out.value(2), "\u{1f600} é");
    }

    #[test]
    fn json_follows_spark_from_json() {
        let fields = vec![
            Field::new("i", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("f", DataType::Float64, true),
            Field::new(
                "t",
                DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
        ];
        let format = ValueFormat::json(DataType::Struct(fields.into()), false).unwrap();
        let values = binary(&[
            Some(br#"{"i": 7, "s": {"x": [1, "a\"b"], "y": null}, "f": "NaN", "t": 1714521600}"#),
            Some(br#"{"s": 5, "t": "2024-05-01T00:00:01Z"}"#),
            Some(br#"{"i": 1.5}"#),
            Some(br#"{"i": "5"}"#),
            Some(br#"{"i": 1e2}"#),
            Some(br#"{"f": "1.5"}"#),
        ]);
        let out = format.parse(values.as_ref(), 0, OnValueError::Null).unwrap();
        let out = out.as_struct();
        assert_eq!(out.column(0).as_primitive::<Int64Type>().value(0), 7);
        let s = out.column(1).as_string::<i32>();
        assert_eq!(s.value(0), r#"{"x":[1,"a\"b"],"y":null}"#);
        assert_eq!(s.value(1), "5");
        assert!(out
            .column(2)
            .as_primitive::<arrow_array::types::Float64Type>()
            .value(0)
            .is_nan());
        let t = out
            .column(3)
            .as_primitive::<arrow_array::types::TimestampMicrosecondType>();
        assert_eq!((t.value(0), t.value(1)), (1_714_521_600_000_000, 1_714_521_601_000_000));
        let nulls: Vec<bool> = (0..6).map(|i| out.is_null(i)).collect();
        assert_eq!(nulls, [false, false, true, true, true, true]);
    }

    #[test]
    fn utf8_is_checked() {
        let values = binary(&[Some(b"ok"), Some(b"\xff")]);
        let err = ValueFormat::Utf8
            .parse(values.as_ref(), 0, OnValueError::Raise)
            .unwrap_err();
        assert_eq!(err.row, 1);
        assert!(err.reason.contains("UTF-8"));
    }

    const SCHEMA_V1: &str = r#"{"type":"record","name":"R","fields":[{"name":"x","type":"long"}]}"#;

    #[test]
    fn avro_plain_and_confluent_framed() {
        // zig-zag longs: 1 -> 0x02, -2 -> 0x03
        let plain = binary(&[Some(&[0x02]), Some(&[0x03])]);
        let out = ValueFormat::avro_plain(SCHEMA_V1).unwrap();
        let out = out.parse(plain.as_ref(), 0, OnValueError::Raise).unwrap();
        let x = out.as_struct().column(0).as_primitive::<Int64Type>();
        assert_eq!(x.values().to_vec(), [1, -2]);

        let framed = binary(&[
            Some(&[0, 0, 0, 0, 7, 0x02]),
            Some(&[0, 0, 0, 0, 9, 0x02]),
            Some(&[0, 0, 0, 0, 7]),
        ]);
        let format = ValueFormat::avro_confluent(&[(7, SCHEMA_V1.to_string())], None).unwrap();
        let err = format.parse(framed.as_ref(), 0, OnValueError::Raise).unwrap_err();
        assert_eq!(err.row, 1);
        assert!(err.reason.contains("unknown schema id 9"), "{}", err.reason);
        let out = format.parse(framed.as_ref(), 0, OnValueError::Null).unwrap();
        let nulls: Vec<bool> = (0..3).map(|i| out.is_null(i)).collect();
        assert_eq!(nulls, [false, true, true]);
    }

    #[test]
    fn writer_ids_taken_turn_about_keep_their_rows_in_place() {
        // Version 2 adds `y` (default 5); the reader is version 2.
        let v2 = r#"{"type":"record","name":"R","fields":[{"name":"x","type":"long"},{"name":"y","type":"long","default":5}]}"#;
        let format = ValueFormat::avro_confluent(&[(1, SCHEMA_V1.into()), (2, v2.into())], None).unwrap();
        // x = row number (zig-zag), ids alternating; a tombstone at row 3; row 6 id 2 with y = 1 (0x02).
        let rows: Vec<Option<Vec<u8>>> = (0..8u8)
            .map(|i| match i {
                3 => None,
                _ if i % 2 == 0 => Some(vec![0, 0, 0, 0, 2, i * 2, 0x02]),
                _ => Some(vec![0, 0, 0, 0, 1, i * 2]),
            })
            .collect();
        let column = |rows: &[Option<Vec<u8>>]| binary(&rows.iter().map(|r| r.as_deref()).collect::<Vec<_>>());
        let out = format.parse(column(&rows).as_ref(), 0, OnValueError::Raise).unwrap();
        let x = out.as_struct().column(0).as_primitive::<Int64Type>();
        let y = out.as_struct().column(1).as_primitive::<Int64Type>();
        let got: Vec<Option<(i64, i64)>> = (0..8)
            .map(|i| (!out.is_null(i)).then(|| (x.value(i), y.value(i))))
            .collect();
        let want: Vec<Option<(i64, i64)>> = (0..8i64)
            .map(|i| match i {
                3 => None,
                _ if i % 2 == 0 => Some((i, 1)),
                _ => Some((i, 5)),
            })
            .collect();
        assert_eq!(got, want);
        // Each value alone gives the same row.
        for (i, row) in rows.iter().enumerate() {
            let alone = format
                .parse(column(std::slice::from_ref(row)).as_ref(), 0, OnValueError::Raise)
                .unwrap();
            assert_eq!(alone.is_null(0), got[i].is_none(), "row {i}");
        }
        // Bad values of both ids: the lowest row is named, and under Null only they are null.
        let mut bad = rows.clone();
        bad[5] = Some(vec![0, 0, 0, 0, 1]); // id 1, no datum
        bad[2] = Some(vec![0, 0, 0, 0, 2, 0x04]); // id 2, `y` missing
        let err = format
            .parse(column(&bad).as_ref(), 10, OnValueError::Raise)
            .unwrap_err();
        assert_eq!(err.row, 12, "{}", err.reason);
        let out = format.parse(column(&bad).as_ref(), 0, OnValueError::Null).unwrap();
        let x = out.as_struct().column(0).as_primitive::<Int64Type>();
        for i in 0..8 {
            let null = matches!(i, 2 | 3 | 5);
            assert_eq!(out.is_null(i), null, "row {i}");
            if !null {
                assert_eq!(x.value(i), i as i64, "row {i}");
            }
        }
    }

    #[test]
    fn a_writer_the_reader_cannot_read_fails_only_its_values() {
        let string_x = r#"{"type":"record","name":"R","fields":[{"name":"x","type":"string"}]}"#;
        let format =
            ValueFormat::avro_confluent(&[(7, SCHEMA_V1.into()), (8, string_x.into())], Some(SCHEMA_V1)).unwrap();
        let values = binary(&[Some(&[0, 0, 0, 0, 7, 0x02]), Some(&[0, 0, 0, 0, 8, 0x02, b'a'])]);
        let err = format.parse(values.as_ref(), 0, OnValueError::Raise).unwrap_err();
        assert_eq!(err.row, 1);
        assert!(err.reason.contains("schema id 8 can't be read"), "{}", err.reason);
        let only_bad = ValueFormat::avro_confluent(&[(8, string_x.into())], Some(SCHEMA_V1));
        assert!(only_bad.unwrap_err().contains("no writer schema can be read"));
    }

    #[test]
    fn parse_column_keeps_order_across_pieces_and_threads() {
        let docs: Vec<String> = (0..40_000).map(|i| format!(r#"{{"a": {i}}}"#)).collect();
        let values: Vec<Option<&[u8]>> = docs.iter().map(|d| Some(d.as_bytes())).collect();
        let column = vec![binary(&values[..25_000]), binary(&values[25_000..])];
        let out = parse_column(&json_format(), &column, OnValueError::Raise, 2).unwrap();
        let got: Vec<i64> = out
            .iter()
            .flat_map(|a| a.as_struct().column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        assert_eq!(got, (0..40_000).collect::<Vec<i64>>());
    }

    /// A string of `n` bytes as a plain Avro datum of `{"s": string}`, or one
    /// whose length claims 64 bytes where 2 follow.
    fn avro_string(n: usize) -> Vec<u8> {
        let mut out = vec![(n as u8) << 1];
        out.extend(std::iter::repeat_n(b'x', n));
        out
    }
    const STRING_SCHEMA: &str = r#"{"type":"record","name":"R","fields":[{"name":"s","type":"string"}]}"#;
    const BAD_AVRO: &[u8] = &[0x80, 0x01, b'a', b'b'];

    /// A whole piece of bad values: the bisection runs in a loop, so a
    /// thread with a small stack survives it (the recursion per bad row it
    /// replaced overflowed a worker's 2 MiB stack at ~14,500 bad rows, and
    /// this 256 KiB one far sooner), every good row is kept where it was,
    /// each bad row is null, raise names the first, and the decoders made
    /// stay linear in the rows.
    #[test]
    fn bad_values_in_bulk_are_set_aside_in_a_loop_with_bounded_stack_and_work() {
        let n = PIECE_ROWS;
        type Pattern = (&'static str, fn(usize) -> bool);
        let patterns: [Pattern; 4] = [
            ("all bad", |_| true),
            ("every other bad", |i| i % 2 == 1),
            ("runs of bad", |i| (i / 100) % 2 == 0),
            ("one bad at the end", |i| i == PIECE_ROWS - 1),
        ];
        let formats: Vec<(&str, ValueFormat, Vec<u8>)> = vec![
            (
                "avro",
                ValueFormat::avro_plain(STRING_SCHEMA).unwrap(),
                BAD_AVRO.to_vec(),
            ),
            ("utf8", ValueFormat::Utf8, vec![b'x', 0xff, 0xfe]),
        ];
        for (name, format, bad) in formats {
            for (pattern, is_bad) in patterns {
                let values: Vec<Vec<u8>> = (0..n)
                    .map(|i| {
                        if is_bad(i) {
                            bad.clone()
                        } else if name == "avro" {
                            avro_string(i % 50)
                        } else {
                            format!("v{i}").into_bytes()
                        }
                    })
                    .collect();
                let column = binary(&values.iter().map(|v| Some(v.as_slice())).collect::<Vec<_>>());
                let (format, column2) = (format.clone(), column.clone());
                let (nulls, raised, attempts) = std::thread::Builder::new()
                    .stack_size(256 << 10)
                    .spawn(move || {
                        ATTEMPTS.with(|a| a.set(0));
                        let nulls = format.parse(column2.as_ref(), 0, OnValueError::Null).unwrap();
                        let attempts = ATTEMPTS.with(|a| a.get());
                        let raised = format.parse(column2.as_ref(), 7, OnValueError::Raise).unwrap_err();
                        (nulls, raised, attempts)
                    })
                    .unwrap()
                    .join()
                    .unwrap();
                let what = format!("{name}, {pattern}");
                let bad_rows: Vec<usize> = (0..n).filter(|&i| is_bad(i)).collect();
                assert_eq!(raised.row, 7 + bad_rows[0], "{what}");
                assert!(!raised.reason.is_empty());
                let got_null: Vec<usize> = (0..n).filter(|&i| nulls.is_null(i)).collect();
                assert_eq!(got_null, bad_rows, "{what}");
                // The good rows are the good values parsed on their own, in place.
                let good: Vec<Option<&[u8]>> = (0..n)
                    .filter(|&i| !is_bad(i))
                    .map(|i| Some(values[i].as_slice()))
                    .collect();
                let alone = match ValueFormat::avro_plain(STRING_SCHEMA) {
                    Ok(avro) if name == "avro" => avro,
                    _ => ValueFormat::Utf8,
                }
                .parse(binary(&good).as_ref(), 0, OnValueError::Raise)
                .unwrap();
                let valid = arrow_array::BooleanArray::from((0..n).map(|i| !is_bad(i)).collect::<Vec<_>>());
                let kept = arrow_select::filter::filter(nulls.as_ref(), &valid).unwrap();
                assert_eq!(kept.len(), alone.len(), "{what}");
                let (kept, alone) = match name {
                    "avro" => (kept.as_struct().column(0).clone(), alone.as_struct().column(0).clone()),
                    _ => (kept, alone),
                };
                assert_eq!(kept.as_string::<i32>(), alone.as_string::<i32>(), "{what}");
                // One decoder per bad row and a few per good run, never one
                // per row over the rest of the piece.
                assert!(attempts <= 3 * n + 64, "{what}: {attempts} decoders for {n} rows");
                // A value that fails before it reaches the decoder (not
                // UTF-8) is left out and the rest go on in the same one.
                if name == "utf8" {
                    assert!(attempts <= 2, "{what}: {attempts} decoders");
                }
            }
        }
    }
}
