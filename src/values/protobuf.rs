//! Protobuf values: plain messages of one type, or Confluent-framed messages
//! (magic byte 0, a 4-byte big-endian schema id, the message indexes as
//! zigzag varints, then the message), parsed into Arrow columns.
//!
//! Schemas arrive as `.proto` text (compiled here by `protox`, with the
//! `google/protobuf/*` well-known files built in), as serialized
//! `FileDescriptorProto`s (what confluent-kafka's Python serializer registers)
//! or as a `FileDescriptorSet` (`protoc --descriptor_set_out`). Each value's
//! wire format is read straight into one Arrow builder per field, driven by
//! the compiled descriptor (see `fast`); a message with groups or extensions
//! is decoded by `prost-reflect`'s `DynamicMessage` first instead, with the
//! same results.
//!
//! Framed values are all read as one message type (the reader): protobuf
//! readers match fields by number, so every version of a message written
//! under another schema id decodes into the newest one's columns, and fields
//! a version lacks stay null (or default). A frame whose id and indexes name
//! another message fails that row.
//!
//! Column types follow protobuf's own readers: scalars at their widths, enums
//! as names, `repeated` as lists and maps as Arrow maps (empty, never null),
//! nested messages as structs (null when unset), fields with presence
//! (`optional`, oneof members, proto2) null when unset and the others their
//! default; `Timestamp` is `timestamp[us, UTC]`, `Duration` `duration[us]`,
//! the wrappers nullable scalars. A recursive message is unrolled
//! `max_recursion` times; a value nesting deeper fails its row.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, DurationMicrosecondBuilder, Float32Builder, Float64Builder, Int32Builder,
    Int64Builder, StringBuilder, TimestampMicrosecondBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{Array, ArrayRef, ListArray, MapArray, StructArray};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, TimeUnit};
use prost::Message as _;
use prost_reflect::{
    DescriptorPool, DynamicMessage, EnumDescriptor, FieldDescriptor, FileDescriptor, Kind, MapKey, MessageDescriptor,
    Value,
};
use protox::file::{File, FileResolver, GoogleFileResolver};

use super::Values;

mod fast;

use fast::{EnumNames, Plan, Wire};

/// How many times a message type may appear on one path from the root by
/// default: a recursive message is unrolled this deep.
pub const MAX_RECURSION: usize = 3;
/// The most a recursive message may be unrolled (Spark's
/// `recursive.fields.max.depth` allows at most 10 too): each level repeats
/// the message's columns, and the data may not nest past
/// `fast::RECURSION_LIMIT` anyway.
pub const MAX_RECURSION_LIMIT: usize = 10;
/// The most message indexes a frame may carry (nesting of message types).
const MAX_INDEXES: usize = 64;

/// One schema file, in any of the forms registries and tools hand out.
#[derive(Clone, Debug)]
pub enum ProtoSource {
    /// `.proto` text.
    Text(String),
    /// A serialized `FileDescriptorProto` (its own name is used).
    Descriptor(Vec<u8>),
    /// A serialized `FileDescriptorSet`: every file in it.
    Set(Vec<u8>),
}

/// Schema files: `(import name, source)`, the main file first.
pub type SchemaFiles = Vec<(String, ProtoSource)>;

/// Files by import name, well-known `google/protobuf/*` files behind them.
struct Files {
    files: HashMap<String, File>,
    google: GoogleFileResolver,
}

impl FileResolver for Files {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match self.files.get(name) {
            Some(file) => Ok(file.clone()),
            None => self.google.open_file(name),
        }
    }
}

/// Compile `files` (`(import name, source)`, the main file first) into one
/// pool; returns it with the name of the main file.
pub fn compile(files: &[(String, ProtoSource)]) -> Result<(DescriptorPool, String), String> {
    let mut resolver = Files {
        files: HashMap::new(),
        google: GoogleFileResolver::new(),
    };
    let mut order = Vec::new();
    for (name, source) in files {
        match source {
            ProtoSource::Text(text) => {
                let file = File::from_source(name, text).map_err(|e| format!("cannot compile {name}: {e}"))?;
                order.push(name.clone());
                resolver.files.insert(name.clone(), file);
            }
            ProtoSource::Descriptor(bytes) => {
                let proto = prost_types::FileDescriptorProto::decode(bytes.as_slice())
                    .map_err(|e| format!("{name} is not a serialized FileDescriptorProto: {e}"))?;
                let own = proto
                    .name
                    .clone()
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| name.clone());
                // Imports name the file by its reference name; keep both.
                let file = File::from_file_descriptor_proto(proto);
                if own != *name {
                    resolver.files.insert(name.clone(), file.clone());
                }
                order.push(own.clone());
                resolver.files.insert(own, file);
            }
            ProtoSource::Set(bytes) => {
                let set = prost_types::FileDescriptorSet::decode(bytes.as_slice())
                    .map_err(|e| format!("{name} is not a serialized FileDescriptorSet: {e}"))?;
                for proto in set.file {
                    let own = proto.name.clone().unwrap_or_default();
                    order.push(own.clone());
                    resolver.files.insert(own, File::from_file_descriptor_proto(proto));
                }
            }
        }
    }
    let main = order.first().cloned().ok_or("no Protobuf schema files were given")?;
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler.include_imports(true);
    for name in &order {
        compiler
            .open_file(name)
            .map_err(|e| format!("cannot compile {name}: {e}"))?;
    }
    Ok((compiler.descriptor_pool(), main))
}

/// The message a frame's indexes name in `file`: the first index picks a
/// top-level message, each next one a message nested in it.
fn message_at(file: &FileDescriptor, indexes: &[i32]) -> Option<MessageDescriptor> {
    let (&first, rest) = indexes.split_first()?;
    let mut message = file.messages().nth(usize::try_from(first).ok()?)?;
    for &i in rest {
        let child = message.child_messages().nth(usize::try_from(i).ok()?)?;
        message = child;
    }
    Some(message)
}

/// A zigzag varint at `*pos`, moving past it.
fn zigzag(value: &[u8], pos: &mut usize) -> Result<i64, String> {
    let mut out: u64 = 0;
    for shift in 0..10 {
        let Some(&byte) = value.get(*pos) else {
            return Err(format!(
                "truncated Confluent Protobuf frame: the message indexes run past the value's {} bytes",
                value.len()
            ));
        };
        *pos += 1;
        out |= u64::from(byte & 0x7f) << (7 * shift);
        if byte & 0x80 == 0 {
            return Ok((out >> 1) as i64 ^ -((out & 1) as i64));
        }
    }
    Err(format!("bad varint in the message indexes at byte {}", *pos - 10))
}

/// A Confluent frame's schema id and message indexes (into `indexes`), and the message bytes.
pub fn read_frame<'a>(value: &'a [u8], indexes: &mut Vec<i32>) -> Result<(u32, &'a [u8]), String> {
    let id = match value {
        [0, a, b, c, d, ..] => u32::from_be_bytes([*a, *b, *c, *d]),
        [magic, ..] if *magic != 0 => {
            return Err(format!(
                "magic byte {magic} where the Confluent prefix has 0 (not Schema Registry framing)"
            ))
        }
        _ => {
            return Err(format!(
                "{} bytes: shorter than the Confluent prefix (magic byte 0 and a 4-byte schema id)",
                value.len()
            ))
        }
    };
    let mut pos = super::CONFLUENT_PREFIX_LEN;
    let count = zigzag(value, &mut pos)?;
    indexes.clear();
    if count == 0 {
        indexes.push(0);
    } else {
        // Each index takes at least a byte: a count is checked against the value before anything is read.
        if count < 0 || count as usize > MAX_INDEXES || count as usize > value.len() - pos {
            return Err(format!(
                "bad message index count {count} in the Confluent Protobuf frame ({} bytes)",
                value.len()
            ));
        }
        for _ in 0..count {
            let index = zigzag(value, &mut pos)?;
            let index = i32::try_from(index)
                .ok()
                .filter(|i| *i >= 0)
                .ok_or_else(|| format!("bad message index {index} in the Confluent Protobuf frame"))?;
            indexes.push(index);
        }
    }
    Ok((id, &value[pos..]))
}

/// The distinct `(schema id, message indexes)` of a column of framed values
/// (values that are not frames are skipped).
pub fn frames_of(values: &dyn Array) -> Result<Vec<(u32, Vec<i32>)>, String> {
    let values = Values::of(values)?;
    let mut seen: Vec<(u32, Vec<i32>)> = Vec::new();
    let mut indexes = Vec::new();
    for i in 0..values.len() {
        let Some(value) = values.get(i) else { continue };
        if let Ok((id, _)) = read_frame(value, &mut indexes) {
            if !seen.iter().any(|(s, ix)| *s == id && *ix == indexes) {
                seen.push((id, indexes.clone()));
            }
        }
    }
    Ok(seen)
}

/// Writer schemas of framed values: by id, the main file (or why it can't be used).
type Writers = HashMap<u32, Result<FileDescriptor, String>>;

/// How Protobuf values are read: the message type of the column, and for
/// framed values the writer schemas by id.
#[derive(Clone, Debug)]
pub struct Protobuf {
    reader: MessageDescriptor,
    writers: Option<Arc<Writers>>,
    max_recursion: usize,
    /// Whether values are read straight from the wire format (else through
    /// `DynamicMessage`: messages with groups or extensions).
    fast: bool,
}

impl Protobuf {
    /// Plain messages of `message` (its full name) from `files`.
    pub fn plain(files: &[(String, ProtoSource)], message: &str, max_recursion: usize) -> Result<Self, String> {
        let (pool, _) = compile(files)?;
        let reader = pool
            .get_message_by_name(message.trim_start_matches('.'))
            .ok_or_else(|| {
                let known: Vec<String> = pool
                    .all_messages()
                    .map(|m| m.full_name().to_string())
                    .take(20)
                    .collect();
                format!("no message {message} in the schema (messages: {})", known.join(", "))
            })?;
        Self::new(reader, None, max_recursion)
    }

    /// Confluent-framed messages: `writers` holds each schema id's files
    /// (the registered schema first, then its references). The column's
    /// message is `message` (a full name), else the one message the `frames`
    /// seen in the values name, else the first message of the newest schema.
    pub fn confluent(
        writers: &[(u32, SchemaFiles)],
        message: Option<&str>,
        frames: &[(u32, Vec<i32>)],
        max_recursion: usize,
    ) -> Result<Self, String> {
        let mut compiled: Writers = HashMap::new();
        for (id, files) in writers {
            let main = compile(files).and_then(|(pool, main)| {
                pool.get_file_by_name(&main)
                    .ok_or_else(|| format!("the schema file {main} is missing after compiling"))
            });
            compiled.insert(*id, main);
        }
        let mut newest_first: Vec<(&u32, &FileDescriptor)> = compiled
            .iter()
            .filter_map(|(id, f)| Some((id, f.as_ref().ok()?)))
            .collect();
        newest_first.sort_by_key(|(id, _)| std::cmp::Reverse(**id));
        let reader = match message {
            Some(name) => {
                let name = name.trim_start_matches('.');
                newest_first
                    .iter()
                    .find_map(|(_, file)| file.parent_pool().get_message_by_name(name))
                    .ok_or_else(|| format!("no message {name} in the registry's schemas"))?
            }
            None => {
                let mut named: Vec<MessageDescriptor> = Vec::new();
                for (id, indexes) in frames {
                    if let Some(Ok(file)) = compiled.get(id) {
                        if let Some(m) = message_at(file, indexes) {
                            if !named.iter().any(|n| n.full_name() == m.full_name()) {
                                named.push(m);
                            }
                        }
                    }
                }
                match named.len() {
                    0 => {
                        let reasons: Vec<String> = compiled
                            .iter()
                            .filter_map(|(id, f)| Some(format!("schema id {id}: {}", f.as_ref().err()?)))
                            .collect();
                        let (_, file) = newest_first
                            .first()
                            .ok_or_else(|| format!("no usable Protobuf writer schema ({})", reasons.join("; ")))?;
                        file.messages()
                            .next()
                            .ok_or("the newest Protobuf schema has no message")?
                    }
                    1 => {
                        // The newest schema's version of that message.
                        let name = named[0].full_name().to_string();
                        newest_first
                            .iter()
                            .find_map(|(_, file)| file.parent_pool().get_message_by_name(&name))
                            .unwrap_or_else(|| named.remove(0))
                    }
                    _ => {
                        let names: Vec<&str> = named.iter().map(|m| m.full_name()).collect();
                        return Err(format!(
                            "the values hold several message types ({}): name the one to read",
                            names.join(", ")
                        ));
                    }
                }
            }
        };
        Self::new(reader, Some(Arc::new(compiled)), max_recursion)
    }

    fn new(reader: MessageDescriptor, writers: Option<Arc<Writers>>, max_recursion: usize) -> Result<Self, String> {
        if max_recursion > MAX_RECURSION_LIMIT {
            return Err(format!(
                "max_recursion must be at most {MAX_RECURSION_LIMIT} (each level repeats the message's columns), not {max_recursion}"
            ));
        }
        let fast = fast::supported(&reader, &mut Vec::new());
        let format = Protobuf {
            reader,
            writers,
            max_recursion: max_recursion.max(1),
            fast,
        };
        format.sink(0)?;
        Ok(format)
    }

    /// The same format read through prost-reflect's `DynamicMessage` only
    /// (the path kept for groups and extensions): the reference the
    /// wire-format path is fuzzed and tested against.
    #[doc(hidden)]
    pub fn through_dynamic_message(&self) -> Protobuf {
        Protobuf {
            fast: false,
            ..self.clone()
        }
    }

    /// Whether values are read straight from the wire format.
    #[doc(hidden)]
    pub fn reads_the_wire_format(&self) -> bool {
        self.fast
    }

    /// The full name of the message being read.
    pub fn message_name(&self) -> &str {
        self.reader.full_name()
    }

    /// The Arrow type of the parsed column (a struct).
    pub fn data_type(&self) -> Result<DataType, String> {
        Ok(self.sink(0)?.root.data_type())
    }

    /// A fresh decoder for `rows` values.
    pub fn sink(&self, rows: usize) -> Result<Sink, String> {
        let mut path = Vec::new();
        let root = MessageColumn::new(&self.reader, &mut path, self.max_recursion, rows)
            .ok_or("the message type nests too deep")?;
        Ok(Sink {
            root,
            reader: self.reader.clone(),
            writers: self.writers.clone(),
            max_recursion: self.max_recursion,
            indexes: Vec::new(),
            known: None,
            fast: self.fast,
        })
    }
}

/// Values being appended to the columns of one message type.
pub struct Sink {
    root: MessageColumn,
    reader: MessageDescriptor,
    writers: Option<Arc<Writers>>,
    max_recursion: usize,
    indexes: Vec<i32>,
    /// The last frame head that named the reader's message.
    known: Option<(u32, Vec<i32>)>,
    fast: bool,
}

impl Sink {
    pub fn push(&mut self, value: &[u8]) -> Result<(), String> {
        let payload = self.payload(value)?;
        if self.fast {
            let cx = fast::Cx {
                buf: payload,
                limit: self.max_recursion,
            };
            return self
                .root
                .decode(&cx, &[(0, payload.len())], 0)
                .map_err(|e| self.bad_message(payload, e));
        }
        let message = DynamicMessage::decode(self.reader.clone(), payload).map_err(|e| {
            format!(
                "bad {} message ({} bytes): {}",
                self.reader.full_name(),
                payload.len(),
                e.to_string().trim_start_matches("failed to decode Protobuf message: ")
            )
        })?;
        self.root.append(&message, self.max_recursion)
    }

    /// Check `value` as [`Sink::push`] reads it, appending nothing: its
    /// frame, and (on the wire-format path) its message. An error here
    /// leaves the sink as it was; `Ok` when only pushing can tell.
    pub fn check(&mut self, value: &[u8]) -> Result<(), String> {
        let payload = self.payload(value)?;
        if self.fast {
            let cx = fast::Cx {
                buf: payload,
                limit: self.max_recursion,
            };
            return self.root.check(&cx).map_err(|e| self.bad_message(payload, e));
        }
        Ok(())
    }

    fn bad_message(&self, payload: &[u8], e: fast::Fail) -> String {
        format!(
            "bad {} message ({} bytes): at byte {}: {}",
            self.reader.full_name(),
            payload.len(),
            e.at,
            e.why
        )
    }

    /// The message bytes of `value`: past its frame, which must name the
    /// message being read, when values are framed.
    fn payload<'v>(&mut self, value: &'v [u8]) -> Result<&'v [u8], String> {
        Ok(match &self.writers {
            None => value,
            Some(writers) => {
                let (id, payload) = read_frame(value, &mut self.indexes)?;
                // (An element loop: a slice `!=` is a memcmp call per value, 3 % of the time.)
                let indexes = &self.indexes;
                if self.known.as_ref().is_none_or(|(k, ix)| {
                    *k != id || ix.len() != indexes.len() || ix.iter().zip(indexes).any(|(a, b)| a != b)
                }) {
                    let file = match writers.get(&id) {
                        None => return Err(format!("unknown schema id {id}: no writer schema was given for it")),
                        Some(Err(why)) => return Err(format!("schema id {id} can't be used: {why}")),
                        Some(Ok(file)) => file,
                    };
                    let Some(message) = message_at(file, &self.indexes) else {
                        return Err(format!(
                            "message index {:?} points at no message in schema id {id}",
                            self.indexes
                        ));
                    };
                    if message.full_name() != self.reader.full_name() {
                        return Err(format!(
                            "schema id {id} index {:?} is message {}, not {} (the message being read)",
                            self.indexes,
                            message.full_name(),
                            self.reader.full_name()
                        ));
                    }
                    self.known = Some((id, self.indexes.clone()));
                }
                payload
            }
        })
    }

    pub fn finish(self) -> Result<ArrayRef, String> {
        Ok(Arc::new(self.root.finish()?))
    }
}

/// The builder of one Arrow column of protobuf values.
enum Column {
    Bool(BooleanBuilder),
    I32(Int32Builder),
    I64(Int64Builder),
    U32(UInt32Builder),
    U64(UInt64Builder),
    F32(Float32Builder),
    F64(Float64Builder),
    Str(StringBuilder),
    Bin(BinaryBuilder),
    Enum(StringBuilder, EnumDescriptor, Box<EnumNames>),
    Timestamp(TimestampMicrosecondBuilder),
    Duration(DurationMicrosecondBuilder),
    /// A `google.protobuf.*Value` wrapper: its `value` field, null when unset.
    Wrapper(Box<Column>, FieldDescriptor, Wire),
    Message(Box<MessageColumn>),
    List(Box<ListColumn>),
    Map(Box<MapColumn>),
}

/// The columns of a message's fields, as a struct.
struct MessageColumn {
    name: String,
    fields: Vec<(FieldDescriptor, Column)>,
    /// Per field: null when unset (it has presence), else the default it reads as.
    unset: Vec<Option<Value>>,
    /// `(field number, index in fields)`, by number: set fields come in number order.
    numbers: Vec<(u32, usize)>,
    /// Fields left out because their message would nest past the limit.
    too_deep: Vec<FieldDescriptor>,
    /// Which fields the message being appended set.
    seen: Vec<bool>,
    nulls: NullBufferBuilder,
    len: usize,
    /// How the wire format is read into `fields`.
    plan: Plan,
}

struct ListColumn {
    offsets: Vec<i32>,
    nulls: NullBufferBuilder,
    item: Column,
}

struct MapColumn {
    offsets: Vec<i32>,
    nulls: NullBufferBuilder,
    key: Column,
    value: Column,
}

const WRAPPERS: [&str; 9] = [
    "google.protobuf.DoubleValue",
    "google.protobuf.FloatValue",
    "google.protobuf.Int64Value",
    "google.protobuf.UInt64Value",
    "google.protobuf.Int32Value",
    "google.protobuf.UInt32Value",
    "google.protobuf.BoolValue",
    "google.protobuf.StringValue",
    "google.protobuf.BytesValue",
];

impl Column {
    /// The column for values of `kind`; None when a message would nest past the limit.
    fn of(kind: &Kind, path: &mut Vec<String>, limit: usize, rows: usize) -> Option<Column> {
        Some(match kind {
            Kind::Double => Column::F64(Float64Builder::with_capacity(rows)),
            Kind::Float => Column::F32(Float32Builder::with_capacity(rows)),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Column::I32(Int32Builder::with_capacity(rows)),
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Column::I64(Int64Builder::with_capacity(rows)),
            Kind::Uint32 | Kind::Fixed32 => Column::U32(UInt32Builder::with_capacity(rows)),
            Kind::Uint64 | Kind::Fixed64 => Column::U64(UInt64Builder::with_capacity(rows)),
            Kind::Bool => Column::Bool(BooleanBuilder::with_capacity(rows)),
            Kind::String => Column::Str(StringBuilder::with_capacity(rows, rows * 8)),
            Kind::Bytes => Column::Bin(BinaryBuilder::with_capacity(rows, rows * 8)),
            Kind::Enum(e) => Column::Enum(
                StringBuilder::with_capacity(rows, rows * 8),
                e.clone(),
                Box::new(EnumNames::of(e)),
            ),
            Kind::Message(m) => match m.full_name() {
                "google.protobuf.Timestamp" => {
                    Column::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows).with_timezone("UTC"))
                }
                "google.protobuf.Duration" => Column::Duration(DurationMicrosecondBuilder::with_capacity(rows)),
                name if WRAPPERS.contains(&name) => {
                    let value = m.get_field(1)?;
                    let inner = Column::of(&value.kind(), path, limit, rows)?;
                    let wire = Wire::of(&value.kind());
                    Column::Wrapper(Box::new(inner), value, wire)
                }
                _ => Column::Message(Box::new(MessageColumn::new(m, path, limit, rows)?)),
            },
        })
    }

    /// The column of a field: its kind, as a list or a map when it is one.
    fn of_field(field: &FieldDescriptor, path: &mut Vec<String>, limit: usize, rows: usize) -> Option<Column> {
        if field.is_map() {
            let Kind::Message(entry) = field.kind() else {
                return None;
            };
            let key = Column::of(&entry.map_entry_key_field().kind(), path, limit, 0)?;
            let value = Column::of(&entry.map_entry_value_field().kind(), path, limit, 0)?;
            return Some(Column::Map(Box::new(MapColumn {
                offsets: vec![0],
                nulls: NullBufferBuilder::new(rows),
                key,
                value,
            })));
        }
        let item = Column::of(&field.kind(), path, limit, if field.is_list() { 0 } else { rows })?;
        if field.is_list() {
            let mut offsets = Vec::with_capacity(rows + 1);
            offsets.push(0);
            return Some(Column::List(Box::new(ListColumn {
                offsets,
                nulls: NullBufferBuilder::new(rows),
                item,
            })));
        }
        Some(item)
    }

    fn data_type(&self) -> DataType {
        match self {
            Column::Bool(_) => DataType::Boolean,
            Column::I32(_) => DataType::Int32,
            Column::I64(_) => DataType::Int64,
            Column::U32(_) => DataType::UInt32,
            Column::U64(_) => DataType::UInt64,
            Column::F32(_) => DataType::Float32,
            Column::F64(_) => DataType::Float64,
            Column::Str(_) | Column::Enum(..) => DataType::Utf8,
            Column::Bin(_) => DataType::Binary,
            Column::Timestamp(_) => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            Column::Duration(_) => DataType::Duration(TimeUnit::Microsecond),
            Column::Wrapper(inner, ..) => inner.data_type(),
            Column::Message(m) => m.data_type(),
            Column::List(l) => DataType::List(l.item_field()),
            Column::Map(m) => DataType::Map(m.entries_field(), false),
        }
    }

    fn append_null(&mut self) {
        match self {
            Column::Bool(b) => b.append_null(),
            Column::I32(b) => b.append_null(),
            Column::I64(b) => b.append_null(),
            Column::U32(b) => b.append_null(),
            Column::U64(b) => b.append_null(),
            Column::F32(b) => b.append_null(),
            Column::F64(b) => b.append_null(),
            Column::Str(b) | Column::Enum(b, ..) => b.append_null(),
            Column::Bin(b) => b.append_null(),
            Column::Timestamp(b) => b.append_null(),
            Column::Duration(b) => b.append_null(),
            Column::Wrapper(inner, ..) => inner.append_null(),
            Column::Message(m) => m.append_null(),
            Column::List(l) => {
                l.offsets.push(*l.offsets.last().unwrap_or(&0));
                l.nulls.append_null();
            }
            Column::Map(m) => {
                m.offsets.push(*m.offsets.last().unwrap_or(&0));
                m.nulls.append_null();
            }
        }
    }

    fn append(&mut self, value: &Value, limit: usize) -> Result<(), String> {
        match (self, value) {
            (Column::Bool(b), Value::Bool(v)) => b.append_value(*v),
            (Column::I32(b), Value::I32(v)) => b.append_value(*v),
            (Column::I64(b), Value::I64(v)) => b.append_value(*v),
            (Column::U32(b), Value::U32(v)) => b.append_value(*v),
            (Column::U64(b), Value::U64(v)) => b.append_value(*v),
            (Column::F32(b), Value::F32(v)) => b.append_value(*v),
            (Column::F64(b), Value::F64(v)) => b.append_value(*v),
            (Column::Str(b), Value::String(v)) => b.append_value(v),
            (Column::Bin(b), Value::Bytes(v)) => b.append_value(v),
            (Column::Enum(b, e, _), Value::EnumNumber(n)) => match e.get_value(*n) {
                Some(v) => b.append_value(v.name()),
                // An open (proto3) enum keeps numbers it has no name for.
                None => b.append_value(n.to_string()),
            },
            (Column::Timestamp(b), Value::Message(m)) => b.append_value(micros(m, "Timestamp")?),
            (Column::Duration(b), Value::Message(m)) => b.append_value(micros(m, "Duration")?),
            (Column::Wrapper(inner, field, _), Value::Message(m)) => inner.append(&m.get_field(field), limit)?,
            (Column::Message(c), Value::Message(m)) => c.append(m, limit)?,
            (Column::List(l), Value::List(items)) => {
                for item in items {
                    l.item.append(item, limit)?;
                }
                let end = l.offsets.last().copied().unwrap_or(0) + offset(items.len())?;
                l.offsets.push(end);
                l.nulls.append_non_null();
            }
            (Column::Map(m), Value::Map(entries)) => {
                // Wire order is lost in a map; keys in order make rows repeatable.
                let mut sorted: Vec<(&MapKey, &Value)> = entries.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                for (k, v) in sorted {
                    m.key.append(&map_key_value(k), limit)?;
                    m.value.append(v, limit)?;
                }
                let end = m.offsets.last().copied().unwrap_or(0) + offset(entries.len())?;
                m.offsets.push(end);
                m.nulls.append_non_null();
            }
            (column, value) => return Err(format!("a {value:?} value where the schema has {}", column.data_type())),
        }
        Ok(())
    }

    fn finish(self) -> Result<ArrayRef, String> {
        Ok(match self {
            Column::Bool(mut b) => Arc::new(b.finish()),
            Column::I32(mut b) => Arc::new(b.finish()),
            Column::I64(mut b) => Arc::new(b.finish()),
            Column::U32(mut b) => Arc::new(b.finish()),
            Column::U64(mut b) => Arc::new(b.finish()),
            Column::F32(mut b) => Arc::new(b.finish()),
            Column::F64(mut b) => Arc::new(b.finish()),
            Column::Str(mut b) | Column::Enum(mut b, ..) => Arc::new(b.finish()),
            Column::Bin(mut b) => Arc::new(b.finish()),
            Column::Timestamp(mut b) => Arc::new(b.finish()),
            Column::Duration(mut b) => Arc::new(b.finish()),
            Column::Wrapper(inner, ..) => inner.finish()?,
            Column::Message(m) => Arc::new(m.finish()?),
            Column::List(l) => {
                let field = l.item_field();
                let ListColumn {
                    offsets,
                    mut nulls,
                    item,
                    ..
                } = *l;
                Arc::new(
                    ListArray::try_new(
                        field,
                        OffsetBuffer::new(ScalarBuffer::from(offsets)),
                        item.finish()?,
                        nulls.finish(),
                    )
                    .map_err(|e| e.to_string())?,
                )
            }
            Column::Map(m) => {
                let field = m.entries_field();
                let DataType::Struct(entry_fields) = field.data_type().clone() else {
                    unreachable!("map entries are a struct")
                };
                let MapColumn {
                    offsets,
                    mut nulls,
                    key,
                    value,
                    ..
                } = *m;
                let entries = StructArray::try_new(entry_fields, vec![key.finish()?, value.finish()?], None)
                    .map_err(|e| e.to_string())?;
                Arc::new(
                    MapArray::try_new(
                        field,
                        OffsetBuffer::new(ScalarBuffer::from(offsets)),
                        entries,
                        nulls.finish(),
                        false,
                    )
                    .map_err(|e| e.to_string())?,
                )
            }
        })
    }
}

impl ListColumn {
    fn item_field(&self) -> FieldRef {
        Arc::new(Field::new("item", self.item.data_type(), true))
    }
}

impl MapColumn {
    fn entries_field(&self) -> FieldRef {
        let fields = Fields::from(vec![
            Field::new("key", self.key.data_type(), false),
            Field::new("value", self.value.data_type(), true),
        ]);
        Arc::new(Field::new("entries", DataType::Struct(fields), false))
    }
}

/// A `Timestamp` or `Duration` (seconds and nanos) in microseconds.
fn micros(message: &DynamicMessage, what: &str) -> Result<i64, String> {
    let seconds = match message.get_field_by_number(1).as_deref() {
        Some(Value::I64(s)) => *s,
        _ => 0,
    };
    let nanos = match message.get_field_by_number(2).as_deref() {
        Some(Value::I32(n)) => *n,
        _ => 0,
    };
    micros_of(seconds, nanos, what)
}

/// `seconds` and `nanos` in microseconds.
fn micros_of(seconds: i64, nanos: i32, what: &str) -> Result<i64, String> {
    seconds
        .checked_mul(1_000_000)
        .and_then(|us| us.checked_add(i64::from(nanos) / 1000))
        .ok_or_else(|| format!("{what} of {seconds} seconds is out of range"))
}

fn map_key_value(key: &MapKey) -> Value {
    match key {
        MapKey::Bool(v) => Value::Bool(*v),
        MapKey::I32(v) => Value::I32(*v),
        MapKey::I64(v) => Value::I64(*v),
        MapKey::U32(v) => Value::U32(*v),
        MapKey::U64(v) => Value::U64(*v),
        MapKey::String(v) => Value::String(v.clone()),
    }
}

fn offset(len: usize) -> Result<i32, String> {
    i32::try_from(len).map_err(|_| format!("{len} items do not fit one Arrow list"))
}

impl MessageColumn {
    fn new(message: &MessageDescriptor, path: &mut Vec<String>, limit: usize, rows: usize) -> Option<Self> {
        if path.iter().filter(|n| *n == message.full_name()).count() >= limit {
            return None;
        }
        path.push(message.full_name().to_string());
        let mut fields = Vec::new();
        let mut too_deep = Vec::new();
        for field in message.fields() {
            match Column::of_field(&field, path, limit, rows) {
                Some(column) => fields.push((field, column)),
                None => too_deep.push(field),
            }
        }
        path.pop();
        let unset = fields
            .iter()
            .map(|(f, _)| (!f.supports_presence() || f.is_list() || f.is_map()).then(|| f.default_value()))
            .collect();
        let mut numbers: Vec<(u32, usize)> = fields.iter().enumerate().map(|(i, (f, _))| (f.number(), i)).collect();
        numbers.sort_unstable();
        let plan = Plan::new(&fields, &too_deep);
        Some(MessageColumn {
            name: message.full_name().to_string(),
            seen: vec![false; fields.len()],
            fields,
            unset,
            numbers,
            too_deep,
            nulls: NullBufferBuilder::new(rows),
            len: 0,
            plan,
        })
    }

    fn arrow_fields(&self) -> Fields {
        self.fields
            .iter()
            .map(|(f, c)| Field::new(f.name(), c.data_type(), true))
            .collect()
    }

    fn data_type(&self) -> DataType {
        DataType::Struct(self.arrow_fields())
    }

    fn append(&mut self, message: &DynamicMessage, limit: usize) -> Result<(), String> {
        // One pass over the fields the message set (in number order), then
        // the unset ones: null, or the default they read as.
        self.seen.fill(false);
        for (field, value) in message.fields() {
            match self.numbers.binary_search_by_key(&field.number(), |(n, _)| *n) {
                Ok(at) => {
                    let i = self.numbers[at].1;
                    self.fields[i].1.append(value, limit)?;
                    self.seen[i] = true;
                }
                Err(_) if self.too_deep.iter().any(|f| f.number() == field.number()) => {
                    return Err(format!(
                        "{}.{} nests deeper than the limit of {limit} levels of a recursive message",
                        self.name,
                        field.name()
                    ));
                }
                Err(_) => {}
            }
        }
        for (i, (_, column)) in self.fields.iter_mut().enumerate() {
            if !self.seen[i] {
                match &self.unset[i] {
                    Some(default) => column.append(default, limit)?,
                    None => column.append_null(),
                }
            }
        }
        self.nulls.append_non_null();
        self.len += 1;
        Ok(())
    }

    fn append_null(&mut self) {
        for (_, column) in &mut self.fields {
            column.append_null();
        }
        self.nulls.append_null();
        self.len += 1;
    }

    fn finish(self) -> Result<StructArray, String> {
        let fields = self.arrow_fields();
        let MessageColumn {
            fields: columns,
            mut nulls,
            len,
            ..
        } = self;
        let arrays = columns
            .into_iter()
            .map(|(_, c)| c.finish())
            .collect::<Result<Vec<_>, _>>()?;
        if arrays.is_empty() {
            return StructArray::try_new_with_length(fields, arrays, nulls.finish(), len).map_err(|e| e.to_string());
        }
        StructArray::try_new(fields, arrays, nulls.finish()).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::{OnValueError, ValueFormat};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, TimestampMicrosecondType, UInt64Type};
    use arrow_array::BinaryArray;

    const SHOP: &str = r#"
        syntax = "proto3";
        package shop;
        import "google/protobuf/timestamp.proto";
        import "google/protobuf/wrappers.proto";
        enum Kind { KIND_UNSET = 0; BOOK = 1; }
        message Order {
            int32 id = 1;
            uint64 big = 2;
            optional string note = 3;
            Kind kind = 4;
            repeated int64 qty = 5;
            map<string, int32> tags = 6;
            Line first = 7;
            google.protobuf.Timestamp at = 8;
            google.protobuf.Int32Value maybe = 9;
            oneof pick { string a = 10; int32 b = 11; }
            message Line { string sku = 1; }
        }
        message Tree { int32 v = 1; repeated Tree kids = 2; }
    "#;

    fn files() -> Vec<(String, ProtoSource)> {
        vec![("shop.proto".into(), ProtoSource::Text(SHOP.into()))]
    }

    fn encode(message: &str, set: impl FnOnce(&mut DynamicMessage)) -> Vec<u8> {
        let (pool, _) = compile(&files()).unwrap();
        let mut m = DynamicMessage::new(pool.get_message_by_name(message).unwrap());
        set(&mut m);
        m.encode_to_vec()
    }

    fn parse(format: &Protobuf, values: &[&[u8]], on_error: OnValueError) -> Result<ArrayRef, crate::values::RowError> {
        let values = BinaryArray::from(values.iter().map(|v| Some(*v)).collect::<Vec<_>>());
        ValueFormat::Protobuf(format.clone()).parse(&values, 0, on_error)
    }

    #[test]
    fn fields_take_protobufs_shapes() {
        let format = Protobuf::plain(&files(), "shop.Order", MAX_RECURSION).unwrap();
        let full = encode("shop.Order", |m| {
            m.set_field_by_name("id", Value::I32(7));
            m.set_field_by_name("big", Value::U64(u64::MAX));
            m.set_field_by_name("note", Value::String("hi".into()));
            m.set_field_by_name("kind", Value::EnumNumber(1));
            m.set_field_by_name("qty", Value::List(vec![Value::I64(1), Value::I64(2)]));
            m.set_field_by_name("b", Value::I32(5));
        });
        let out = parse(&format, &[&full, b""], OnValueError::Raise).unwrap();
        let out = out.as_struct();
        let DataType::Struct(fields) = out.data_type() else {
            panic!()
        };
        let types: Vec<String> = fields
            .iter()
            .map(|f| format!("{}:{}", f.name(), f.data_type()))
            .collect();
        assert_eq!(
            types[..5],
            ["id:Int32", "big:UInt64", "note:Utf8", "kind:Utf8", "qty:List(Int64)"]
        );
        assert_eq!(
            out.column(0).as_primitive::<Int32Type>().values().to_vec(),
            [7, 0],
            "unset scalar: default"
        );
        assert_eq!(out.column(1).as_primitive::<UInt64Type>().value(0), u64::MAX);
        assert!(out.column(2).is_null(1), "unset optional: null");
        assert_eq!(out.column(3).as_string::<i32>().value(1), "KIND_UNSET");
        let qty = out.column(4).as_list::<i32>();
        assert_eq!((qty.value(0).len(), qty.value(1).len(), qty.is_null(1)), (2, 0, false));
        let tags = out.column(5).as_map();
        assert_eq!((tags.value(1).len(), tags.is_null(1)), (0, false));
        assert!(out.column(6).is_null(0), "unset message: null");
        assert!(out.column(7).is_null(0) && out.column(8).is_null(0));
        assert!(out.column(9).is_null(0), "the other oneof member: null");
        assert_eq!(out.column(10).as_primitive::<Int32Type>().value(0), 5);
    }

    #[test]
    fn timestamps_and_wrappers() {
        let format = Protobuf::plain(&files(), "shop.Order", MAX_RECURSION).unwrap();
        let (pool, _) = compile(&files()).unwrap();
        let mut at = DynamicMessage::new(pool.get_message_by_name("google.protobuf.Timestamp").unwrap());
        at.set_field_by_name("seconds", Value::I64(1_700_000_000));
        at.set_field_by_name("nanos", Value::I32(123_456_789));
        let mut maybe = DynamicMessage::new(pool.get_message_by_name("google.protobuf.Int32Value").unwrap());
        maybe.set_field_by_name("value", Value::I32(0));
        let value = encode("shop.Order", |m| {
            m.set_field_by_name("at", Value::Message(at));
            m.set_field_by_name("maybe", Value::Message(maybe));
        });
        let out = parse(&format, &[&value], OnValueError::Raise).unwrap();
        let out = out.as_struct();
        let at = out.column(7).as_primitive::<TimestampMicrosecondType>();
        assert_eq!(at.value(0), 1_700_000_000_123_456);
        assert_eq!(
            out.column(8).as_primitive::<Int32Type>().value(0),
            0,
            "a set wrapper of 0 is 0, not null"
        );
    }

    #[test]
    fn recursion_is_unrolled_to_the_limit_and_deeper_values_fail() {
        let format = Protobuf::plain(&files(), "shop.Tree", 2).unwrap();
        let leaf = encode("shop.Tree", |m| m.set_field_by_name("v", Value::I32(3)));
        let (pool, _) = compile(&files()).unwrap();
        let tree = pool.get_message_by_name("shop.Tree").unwrap();
        let nest = |inner: &[u8]| {
            let mut m = DynamicMessage::new(tree.clone());
            m.set_field_by_name(
                "kids",
                Value::List(vec![Value::Message(
                    DynamicMessage::decode(tree.clone(), inner).unwrap(),
                )]),
            );
            m.encode_to_vec()
        };
        let two = nest(&leaf);
        let three = nest(&two);
        let err = parse(&format, &[&two, &three], OnValueError::Raise).unwrap_err();
        assert_eq!(err.row, 1);
        assert!(
            err.reason.contains("shop.Tree.kids nests deeper than the limit of 2"),
            "{}",
            err.reason
        );
        let out = parse(&format, &[&two, &three], OnValueError::Null).unwrap();
        assert!(!out.is_null(0) && out.is_null(1));
        // Unrolling is bounded too: each level repeats the message's columns.
        assert!(Protobuf::plain(&files(), "shop.Tree", MAX_RECURSION_LIMIT).is_ok());
        let err = Protobuf::plain(&files(), "shop.Tree", MAX_RECURSION_LIMIT + 1).unwrap_err();
        assert!(err.contains("max_recursion must be at most 10"), "{err}");
    }

    #[test]
    fn confluent_frames_pick_messages_by_index() {
        let writers = vec![(5, files())];
        // [1] is shop.Tree; the frames seen choose it.
        let format = Protobuf::confluent(&writers, None, &[(5, vec![1])], MAX_RECURSION).unwrap();
        assert_eq!(format.message_name(), "shop.Tree");
        let tree = encode("shop.Tree", |m| m.set_field_by_name("v", Value::I32(9)));
        let framed = |head: &[u8]| [head, &tree].concat();
        let good = framed(&[0, 0, 0, 0, 5, 2, 2]);
        let bad = [
            framed(&[0, 0, 0, 0, 6, 2, 2]),     // unknown id
            framed(&[0, 0, 0, 0, 5, 2, 8]),     // index 4: no message
            framed(&[0, 0, 0, 0, 5, 0]),        // [0] is shop.Order
            vec![0, 0, 0, 0, 5, 0x80],          // bad varint
            vec![0, 0, 0, 0, 5, 2, 2, 0x0a, 5], // truncated payload
            vec![1, 0, 0],                      // not a frame
            framed(&[0, 0, 0, 0, 5, 0x7e]),     // a count past the value
        ];
        let mut values: Vec<&[u8]> = vec![&good];
        values.extend(bad.iter().map(|b| b.as_slice()));
        let out = parse(&format, &values, OnValueError::Null).unwrap();
        assert_eq!(out.null_count(), bad.len());
        assert_eq!(out.as_struct().column(0).as_primitive::<Int32Type>().value(0), 9);
        let reasons: Vec<String> = (1..values.len())
            .map(|i| parse(&format, &values[i..=i], OnValueError::Raise).unwrap_err().reason)
            .collect();
        for (reason, want) in reasons.iter().zip([
            "unknown schema id 6",
            "points at no message",
            "is message shop.Order, not shop.Tree",
            "truncated",
            "bad shop.Tree message",
            "magic byte 1",
            "bad message index count",
        ]) {
            assert!(reason.contains(want), "{reason:?} should say {want:?}");
        }
        // [0, 1]: Order's nested types count its map entry (TagsEntry) first, as protoc orders them.
        let nested = Protobuf::confluent(&writers, Some("shop.Order.Line"), &[], MAX_RECURSION).unwrap();
        let line = encode("shop.Order.Line", |m| {
            m.set_field_by_name("sku", Value::String("x".into()))
        });
        let out = parse(
            &nested,
            &[&[&[0, 0, 0, 0, 5, 4, 0, 2][..], &line].concat()],
            OnValueError::Raise,
        )
        .unwrap();
        assert_eq!(out.as_struct().column(0).as_string::<i32>().value(0), "x");
    }

    #[test]
    fn a_wire_type_contradicting_the_field_fails_its_row() {
        let format = Protobuf::plain(&files(), "shop.Order", MAX_RECURSION).unwrap();
        // field 1 (int32) as a length-delimited string
        let err = parse(&format, &[&[0x0a, 1, b'x']], OnValueError::Raise).unwrap_err();
        assert!(err.reason.contains("wire type"), "{}", err.reason);
        let sums = parse(&format, &[&[0x08, 0x96, 0x01, 0xf8, 0x07, 1]], OnValueError::Raise).unwrap();
        let id = sums.as_struct().column(0).as_primitive::<Int32Type>().value(0);
        assert_eq!(id, 150, "an unknown field (127) is ignored");
    }

    #[test]
    fn bad_schemas_are_errors_not_panics() {
        let bad = vec![("x.proto".into(), ProtoSource::Text("message {".into()))];
        assert!(Protobuf::plain(&bad, "X", 3)
            .unwrap_err()
            .contains("cannot compile x.proto"));
        assert!(Protobuf::plain(&files(), "shop.Nope", 3)
            .unwrap_err()
            .contains("no message shop.Nope"));
        let junk = vec![("y".into(), ProtoSource::Descriptor(vec![0xff, 0xff]))];
        assert!(Protobuf::plain(&junk, "X", 3).is_err());
    }
}
