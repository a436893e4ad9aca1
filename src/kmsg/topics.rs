//! Internal topics as tables: the framing of each topic's records (Kafka's
//! `CoordinatorRecordSerde`, `MetadataRecordSerde`/`AbstractApiMessageSerde`,
//! `RemoteLogMetadataSerde`, and the KRaft control records of
//! `ControlRecordUtils`), and the table the rows go to.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
use arrow_buffer::BooleanBufferBuilder;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use super::columns::{null_array, struct_fields, zeros_for, BinCol, Col, StructCol};
use super::defs::{control_type, Definitions, Kind};
use super::json;
use super::model::MessageDef;
use super::read::{flat_plan, read_flat_block, read_flat_row, read_message, Cur, ReadError};
use super::Payloads;

/// The most rows read field by field at a time: their bytes stay in the
/// cache from one field to the next.
const BLOCK: usize = 256;
use crate::varint::read_zigzag;

/// One record type of a topic, and its column.
#[derive(Debug, Clone)]
pub struct RecordType {
    /// Kafka's name without the Key/Value suffix (`OffsetCommit`, `TopicRecord`, `LeaderChange`).
    pub name: String,
    /// The column: `name` in snake case.
    pub column: String,
    /// The message read for the key (coordinator records).
    pub key: Option<usize>,
    /// The message read for the value (or the metadata/control record).
    pub value: usize,
    /// The KRaft control record type, for control records.
    pub control: Option<i16>,
}

/// `OffsetCommit` -> `offset_commit`, `KRaftVersion` -> `kraft_version`.
pub fn snake_case(name: &str) -> String {
    let name = name.replace("KRaft", "Kraft");
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push('_');
            }
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// The record types of one topic, by record type id.
pub fn record_types(defs: &Definitions, kind: Kind) -> Vec<RecordType> {
    let mut out = Vec::new();
    for (i, m) in defs.messages_of(kind) {
        if kind.is_coordinator() {
            let Some(base) = m.name.strip_suffix("Key") else {
                continue;
            };
            let Some(value) = defs.reg.message_index(&format!("{base}Value")) else {
                continue;
            };
            out.push(RecordType {
                name: base.to_string(),
                column: snake_case(base),
                key: Some(i),
                value,
                control: None,
            });
        } else if let Some((t, name)) = control_type(&m.name) {
            out.push(RecordType {
                name: name.to_string(),
                column: snake_case(name),
                key: None,
                value: i,
                control: Some(t),
            });
        } else if m.api_key.is_some() {
            out.push(RecordType {
                name: m.name.clone(),
                column: snake_case(&m.name),
                key: None,
                value: i,
                control: None,
            });
        }
    }
    // Columns in Kafka's record type order (control records last).
    out.sort_by_key(|t| match (t.key, t.control) {
        (Some(k), _) => key_ids(&defs.reg.messages[k]).first().map_or(i32::MAX, |&i| i as i32),
        (None, Some(c)) => i16::MAX as i32 + c as i32,
        (None, None) => defs.reg.messages[t.value].api_key.map_or(i32::MAX, i32::from),
    });
    out
}

/// The record type ids a coordinator key definition stands for: its
/// `apiKey` (Kafka 4's `coordinator-key` files), else its valid versions
/// (the record type is the key's version in older files).
fn key_ids(m: &MessageDef) -> Vec<i16> {
    match m.api_key {
        Some(k) if m.kind == "coordinator-key" => vec![k],
        _ if m.valid.is_empty() => Vec::new(),
        _ => (m.valid.lo..=m.valid.hi.min(m.valid.lo.saturating_add(255))).collect(),
    }
}

fn is_flexible(m: &MessageDef) -> bool {
    !m.flexible.is_empty()
}

/// The Arrow type of a record type's column.
fn column_type(defs: &Definitions, t: &RecordType, consumer_protocol: Option<(usize, usize)>) -> DataType {
    let value = &defs.reg.messages[t.value];
    let mut value_fields = struct_fields(&defs.reg, value.root, is_flexible(value));
    if t.name == "GroupMetadata" {
        if let Some(cp) = consumer_protocol {
            value_fields = with_consumer_protocol(defs, value_fields, cp);
        }
    }
    match t.key {
        Some(k) => {
            let key = &defs.reg.messages[k];
            DataType::Struct(Fields::from(vec![
                Field::new(
                    "key",
                    DataType::Struct(struct_fields(&defs.reg, key.root, is_flexible(key))),
                    true,
                ),
                Field::new("value", DataType::Struct(value_fields), true),
            ]))
        }
        None => DataType::Struct(value_fields),
    }
}

/// The names of the decoded consumer protocol fields added to each member of
/// a `GroupMetadataValue` (after its own fields).
pub const SUBSCRIPTION_COLUMN: &str = "consumerProtocolSubscription";
pub const ASSIGNMENT_COLUMN: &str = "consumerProtocolAssignment";

fn with_consumer_protocol(defs: &Definitions, fields: Fields, (sub, asg): (usize, usize)) -> Fields {
    let mut out: Vec<Field> = Vec::new();
    for f in fields.iter() {
        if f.name() == "members" {
            if let DataType::List(item) = f.data_type() {
                if let DataType::Struct(member) = item.data_type() {
                    let mut m: Vec<Field> = member.iter().map(|x| x.as_ref().clone()).collect();
                    for (name, msg) in [(SUBSCRIPTION_COLUMN, sub), (ASSIGNMENT_COLUMN, asg)] {
                        let root = defs.reg.messages[msg].root;
                        m.push(Field::new(
                            name,
                            DataType::Struct(struct_fields(&defs.reg, root, false)),
                            true,
                        ));
                    }
                    let item = Field::new(item.name(), DataType::Struct(Fields::from(m)), true);
                    out.push(Field::new(f.name(), DataType::List(Arc::new(item)), true));
                    continue;
                }
            }
        }
        out.push(f.as_ref().clone());
    }
    Fields::from(out)
}

/// Decodes the keys and values of one internal topic, row by row, into a table.
pub struct TableDecoder<'d> {
    defs: &'d Definitions,
    kind: Kind,
    types: Vec<RecordType>,
    /// Record type (key type or api key) -> index in `types`: a table, as ids are small.
    by_id: IdTable,
    by_control: HashMap<i16, usize>,
    cols: Vec<StructCol>,
    consumer_protocol: Option<(usize, usize)>,
    /// The index of `GroupMetadata` in `types` (its members' bytes are decoded too).
    group_metadata: Option<usize>,
    /// The rows' fixed columns (record type, id, versions, tombstone) as
    /// runs of equal rows: a partition is mostly runs of one record type at
    /// one version, so a row costs a comparison, and the columns are
    /// written in bulk by `finish`.
    heads: Vec<(RowHead, u32)>,
    error: Col,
    json: Option<Col>,
    rows: usize,
    /// Rows the caller expects (room reserved for them).
    expected: usize,
    /// The record type and value version of the last coordinator row read
    /// by `push_flat`, with what it needs to read the next of the same.
    flat: Option<FlatRow>,
    /// Whether the last run of `heads` is `flat`'s (its rows extend it).
    flat_run: bool,
}

/// A coordinator record's key and value both read by flat plans (see
/// `read::Plan`): the common case of a partition, rows of one record type
/// at one key and value version.
#[derive(Clone, Copy)]
struct FlatRow {
    rtype: i16,
    value_version: i16,
    t: usize,
    key_plan: usize,
    value_plan: usize,
    head: RowHead,
}

/// What one row turned out to be, for the fixed columns.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
struct RowHead {
    type_index: Option<usize>,
    /// The row's name when it has no record type (control markers): an
    /// index in `CONTROL_NAMES`.
    name: Option<u8>,
    id: Option<i16>,
    key_version: Option<i16>,
    value_version: Option<i16>,
    tombstone: bool,
}

/// Record type ids (non-negative int16) to type indexes.
#[derive(Default)]
struct IdTable(Vec<Option<usize>>);

impl IdTable {
    fn insert(&mut self, id: i16, t: usize) {
        let Ok(i) = usize::try_from(id) else { return };
        if self.0.len() <= i {
            self.0.resize(i + 1, None);
        }
        self.0[i] = Some(t);
    }

    #[inline]
    fn get(&self, id: i16) -> Option<&usize> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.0.get(i))
            .and_then(Option::as_ref)
    }
}

/// The names of control records without a record type of their own.
const CONTROL_NAMES: [&str; 3] = ["Abort", "Commit", "Control"];

/// An error of a message read at byte `by` of the record's bytes, its reason after `what`.
#[cold]
#[inline(never)]
fn within(e: ReadError, by: usize, what: &str) -> ReadError {
    ReadError::corrupt(e.at + by, format!("{what}{}", e.reason))
}

fn err_at<T>(at: usize, reason: impl Into<String>) -> Result<T, ReadError> {
    Err(ReadError::corrupt(at, reason))
}

impl<'d> TableDecoder<'d> {
    pub fn new(defs: &'d Definitions, kind: Kind, with_json: bool) -> TableDecoder<'d> {
        let types = record_types(defs, kind);
        let consumer_protocol = if kind == Kind::ConsumerOffsets {
            match (
                defs.reg.message_index("ConsumerProtocolSubscription"),
                defs.reg.message_index("ConsumerProtocolAssignment"),
            ) {
                (Some(s), Some(a)) => Some((s, a)),
                _ => None,
            }
        } else {
            None
        };
        let mut by_id = IdTable::default();
        let mut by_control = HashMap::new();
        for (i, t) in types.iter().enumerate() {
            match (t.key, t.control) {
                (Some(k), _) => {
                    for id in key_ids(&defs.reg.messages[k]) {
                        by_id.insert(id, i);
                    }
                }
                (None, Some(c)) => {
                    by_control.insert(c, i);
                }
                (None, None) => {
                    if let Some(k) = defs.reg.messages[t.value].api_key {
                        by_id.insert(k, i);
                    }
                }
            }
        }
        let cols = types
            .iter()
            .map(|t| match column_type(defs, t, consumer_protocol) {
                DataType::Struct(fields) => StructCol::from_fields(fields),
                _ => StructCol::from_fields(Fields::empty()),
            })
            .collect();
        let group_metadata = types.iter().position(|t| t.name == "GroupMetadata");
        TableDecoder {
            defs,
            kind,
            group_metadata,
            types,
            by_id,
            by_control,
            cols,
            consumer_protocol,
            heads: Vec::new(),
            error: Col::for_data_type(&DataType::Utf8),
            json: with_json.then(|| Col::for_data_type(&DataType::Utf8)),
            rows: 0,
            expected: 0,
            flat: None,
            flat_run: false,
        }
    }

    pub fn record_types(&self) -> &[RecordType] {
        &self.types
    }

    /// The table's schema.
    pub fn schema(&self) -> SchemaRef {
        let mut fields = vec![
            Field::new("record_type", DataType::Utf8, true),
            Field::new("record_type_id", DataType::Int16, true),
            Field::new("key_version", DataType::Int16, true),
            Field::new("value_version", DataType::Int16, true),
            Field::new("tombstone", DataType::Boolean, true),
        ];
        for (t, c) in self.types.iter().zip(&self.cols) {
            fields.push(Field::new(t.column.clone(), c.data_type(), true));
        }
        fields.push(Field::new("error", DataType::Utf8, true));
        if self.json.is_some() {
            fields.push(Field::new("json", DataType::Utf8, true));
        }
        Arc::new(Schema::new(fields))
    }

    /// Decode one record: its key and value (`None` for null) and whether it
    /// is a control record. A failure goes to the row's `error`.
    pub fn push(&mut self, key: Option<&[u8]>, value: Option<&[u8]>, control: bool) {
        if let (Some(k), Some(v), false, None) = (key, value, control, &self.json) {
            if self.kind.is_coordinator() && self.push_flat(k, v) {
                return;
            }
        }
        self.flat_run = false;
        let mut head = RowHead::default();
        let result = if control {
            self.push_control(key, value, &mut head)
        } else if self.kind.is_coordinator() {
            self.push_coordinator(key, value, &mut head)
        } else {
            self.push_metadata(value, &mut head)
        };
        let error = result.err();
        if let Some(t) = head.type_index {
            let col = &mut self.cols[t];
            if error.is_some() {
                // Nothing half-read stays behind: the row is null in its column.
                col.truncate(self.rows);
                let missing = self.rows + 1 - col.len;
                col.append_nulls(missing);
            }
        }
        let json_text = match (&error, &self.json, head.type_index) {
            (None, Some(_), Some(t)) => {
                self.cols[t].sync_deep();
                Some(json::row_json(self, t, &head_json(&head)))
            }
            _ => None,
        };
        match self.heads.last_mut() {
            Some((last, n)) if *last == head && *n < u32::MAX => *n += 1,
            _ => self.heads.push((head, 1)),
        }
        if let Some(e) = error {
            // Rows without an error are padded with nulls in bulk.
            let text = format!("{} at byte {}: {}", self.kind.name(), e.at, e.reason);
            let missing = self.rows - self.error.len();
            self.error.append_nulls(missing);
            push_opt_str(&mut self.error, Some(&text));
        }
        if let Some(j) = &mut self.json {
            push_opt_str(j, json_text.as_deref());
        }
        self.rows += 1;
    }

    /// Decode the first `min(keys, values)` rows (`control[i]`: whether row
    /// `i` is a control record). Runs of coordinator records of one record
    /// type at one key and value version, both read by flat plans (see
    /// `read::Plan`), are read in blocks of up to `BLOCK` rows, field by
    /// field; a block with a row that is not accepted is read row by row
    /// instead (which says what is wrong with it).
    pub fn push_rows<K: Payloads + ?Sized, V: Payloads + ?Sized>(
        &mut self,
        keys: &K,
        values: &V,
        control: Option<&[bool]>,
    ) {
        let n = keys.rows().min(values.rows());
        self.expect_rows(self.rows + n);
        let is_control = |i: usize| control.and_then(|c| c.get(i)).copied().unwrap_or(false);
        let blocks = self.json.is_none() && self.kind.is_coordinator();
        let mut ks: Vec<&[u8]> = Vec::new();
        let mut vs: Vec<&[u8]> = Vec::new();
        let mut pos = Vec::new();
        let mut i = 0;
        while i < n {
            let (key, value, ctl) = (keys.row(i), values.row(i), is_control(i));
            let prefixes = match (key, value) {
                (Some(k), Some(v)) if blocks && !ctl => k.first_chunk::<2>().zip(v.first_chunk::<2>()),
                _ => None,
            };
            let flat = prefixes.and_then(|(kt, vt)| self.flat_for(i16::from_be_bytes(*kt), i16::from_be_bytes(*vt)));
            let (Some(flat), Some((&kt, &vt))) = (flat, prefixes) else {
                self.push(key, value, ctl);
                i += 1;
                continue;
            };
            ks.clear();
            vs.clear();
            let mut j = i;
            while j < n && ks.len() < BLOCK && !is_control(j) {
                match (keys.row(j), values.row(j)) {
                    (Some(k), Some(v)) if k.first_chunk() == Some(&kt) && v.first_chunk() == Some(&vt) => {
                        ks.push(&k[2..]);
                        vs.push(&v[2..]);
                    }
                    _ => break,
                }
                j += 1;
            }
            if !self.push_block(flat, &ks, &vs, n - i, &mut pos) {
                for r in i..j {
                    self.push(keys.row(r), values.row(r), false);
                }
            }
            i = j;
        }
    }

    /// The flat plans of record type `rtype` with a value at version `vv`
    /// (the last ones, or new ones), when there are.
    #[inline]
    fn flat_for(&mut self, rtype: i16, vv: i16) -> Option<FlatRow> {
        match self.flat {
            Some(f) if f.rtype == rtype && f.value_version == vv => Some(f),
            _ => {
                let f = self.flat_row(rtype, vv)?;
                self.flat = Some(f);
                self.flat_run = false;
                Some(f)
            }
        }
    }

    /// Rows of `flat`'s record type and versions, their keys and values
    /// after the 2-byte record type and value version, read field by field;
    /// `false`, with nothing left behind, when a row's bytes are not
    /// accepted. `room`: the rows still to come, this block's included.
    fn push_block(
        &mut self,
        flat: FlatRow,
        keys: &[&[u8]],
        values: &[&[u8]],
        room: usize,
        pos: &mut Vec<usize>,
    ) -> bool {
        let rows = self.rows;
        let n = keys.len();
        let col = self.column(flat.t);
        let [Col::Struct(kc), Col::Struct(vc)] = col.children.as_mut_slice() else {
            return false;
        };
        if !read_flat_block(kc, flat.key_plan, keys, room, pos) {
            return false;
        }
        if !read_flat_block(vc, flat.value_plan, values, room, pos) {
            kc.truncate(rows);
            return false;
        }
        col.close_n(n);
        match self.heads.last_mut() {
            Some((last, m)) if *last == flat.head && (*m as usize) + n <= u32::MAX as usize => *m += n as u32,
            _ => self.heads.push((flat.head, n as u32)),
        }
        self.flat_run = true;
        self.rows += n;
        true
    }

    /// A coordinator record whose key and value are read by flat plans, in
    /// one pass with nothing to build but the values; `false`, with
    /// nothing left behind, for anything else (`push` then reads it and
    /// says what is wrong).
    #[inline]
    fn push_flat(&mut self, key: &[u8], value: &[u8]) -> bool {
        let (Some(kt), Some(vt)) = (key.first_chunk::<2>(), value.first_chunk::<2>()) else {
            return false;
        };
        let (rtype, vv) = (i16::from_be_bytes(*kt), i16::from_be_bytes(*vt));
        let Some(flat) = self.flat_for(rtype, vv) else {
            return false;
        };
        let rows = self.rows;
        let col = self.column(flat.t);
        let [Col::Struct(kc), Col::Struct(vc)] = col.children.as_mut_slice() else {
            return false;
        };
        if !read_flat_row(kc, flat.key_plan, &key[2..]) {
            return false;
        }
        if !read_flat_row(vc, flat.value_plan, &value[2..]) {
            kc.truncate(rows);
            return false;
        }
        col.close();
        match self.heads.last_mut() {
            Some((_, n)) if self.flat_run && *n < u32::MAX => *n += 1,
            _ => {
                self.heads.push((flat.head, 1));
                self.flat_run = true;
            }
        }
        self.rows += 1;
        true
    }

    /// The flat plans of record type `rtype` with a value at version `vv`,
    /// when both key and value are flat (GroupMetadata, whose members'
    /// bytes are decoded too, never is).
    fn flat_row(&mut self, rtype: i16, vv: i16) -> Option<FlatRow> {
        let &t = self.by_id.get(rtype)?;
        if self.group_metadata == Some(t) {
            return None;
        }
        let reg = &self.defs.reg;
        let rt = &self.types[t];
        let key_msg = &reg.messages[rt.key?];
        let value_msg = &reg.messages[rt.value];
        let kv = if key_msg.valid.contains(rtype) {
            rtype
        } else {
            key_msg.valid.lo
        };
        let [Col::Struct(kc), Col::Struct(vc)] = self.cols[t].children.as_mut_slice() else {
            return None;
        };
        Some(FlatRow {
            rtype,
            value_version: vv,
            t,
            key_plan: flat_plan(reg, key_msg, kv, kc)?,
            value_plan: flat_plan(reg, value_msg, vv, vc)?,
            head: RowHead {
                type_index: Some(t),
                name: None,
                id: Some(rtype),
                key_version: Some(kv),
                value_version: Some(vv),
                tombstone: false,
            },
        })
    }

    /// Expect `rows` rows: room is reserved in a record type's column when
    /// its first row comes.
    pub fn expect_rows(&mut self, rows: usize) {
        self.expected = rows;
    }

    /// The fixed columns (`record_type` .. `tombstone`) of the rows so far,
    /// written run by run; the runs start over.
    fn finish_heads(&mut self) -> [ArrayRef; 5] {
        let mut cols = [DataType::Int16, DataType::Int16, DataType::Int16].map(|t| Col::for_data_type(&t));
        let mut tombstone = BooleanBufferBuilder::new(self.rows);
        let mut names = BinCol::with_rows(self.rows);
        for (head, n) in std::mem::take(&mut self.heads) {
            let n = n as usize;
            let name = match (head.type_index, head.name) {
                (Some(t), _) => Some(self.types[t].name.as_str()),
                (None, Some(c)) => CONTROL_NAMES.get(usize::from(c)).copied(),
                (None, None) => None,
            };
            match name {
                Some(s) => names.push_n(s.as_bytes(), n),
                None => names.push_n_nulls(n),
            }
            for (col, v) in cols.iter_mut().zip([head.id, head.key_version, head.value_version]) {
                match (col, v) {
                    (Col::I16(c), Some(x)) => c.push_n(x, n),
                    (col, _) => col.append_nulls(n),
                }
            }
            tombstone.append_n(n, head.tombstone);
        }
        let [id, kv, vv] = cols.map(|mut c| c.finish());
        let tombstone: ArrayRef = Arc::new(BooleanArray::new(tombstone.finish(), None));
        [Col::Str(names).finish(), id, kv, vv, tombstone]
    }

    /// Pad type `t`'s column with nulls up to the current row, and return it.
    fn column(&mut self, t: usize) -> &mut StructCol {
        let col = &mut self.cols[t];
        if col.len == 0 && self.expected > self.rows {
            col.reserve(self.expected - self.rows);
        }
        if col.len < self.rows {
            col.append_nulls(self.rows - col.len);
        }
        col
    }

    fn push_control(&mut self, key: Option<&[u8]>, value: Option<&[u8]>, head: &mut RowHead) -> Result<(), ReadError> {
        let mut k = Cur::new(key.unwrap_or(&[]));
        let version = k.i16("control record key version")?;
        let ctype = k.i16("control record type")?;
        head.key_version = Some(version);
        head.id = Some(ctype);
        head.name = Some(match ctype {
            0 | 1 => ctype as u8,
            _ => 2,
        });
        let Some(&t) = self.by_control.get(&ctype) else {
            return if ctype <= 1 {
                Ok(())
            } else {
                err_at(2, format!("control record type {ctype} has no definition"))
            };
        };
        let value = value
            .ok_or_else(|| ReadError::corrupt(0, format!("{} control record without a value", self.types[t].name)))?;
        let msg = &self.defs.reg.messages[self.types[t].value];
        // Kafka writes these at their current version, with no version prefix.
        let v = msg.valid.lo;
        head.value_version = Some(v);
        head.type_index = Some(t);
        let defs = self.defs;
        let col = self.column(t);
        read_message(&defs.reg, msg, v, value, col)?;
        Ok(())
    }

    fn push_coordinator(
        &mut self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        head: &mut RowHead,
    ) -> Result<(), ReadError> {
        let key = key.ok_or_else(|| ReadError::corrupt(0, "a record without a key"))?;
        let mut k = Cur::new(key);
        let rtype = k.i16("record type")?;
        head.id = Some(rtype);
        let Some(&t) = self.by_id.get(rtype) else {
            return err_at(0, format!("unknown record type {rtype}"));
        };
        let defs = self.defs;
        let rt = &self.types[t];
        head.type_index = Some(t);
        let key_msg = &defs.reg.messages[rt.key.unwrap_or(rt.value)];
        let value_msg = &defs.reg.messages[rt.value];
        let kv = if key_msg.valid.contains(rtype) {
            rtype
        } else {
            key_msg.valid.lo
        };
        head.key_version = Some(kv);
        let is_group = self.group_metadata == Some(t);
        let cp = self.consumer_protocol;
        let rows = self.rows;
        let col = self.column(t);
        let (key_col, value_col) = match col.children.as_mut_slice() {
            [Col::Struct(a), Col::Struct(b)] => (a, b),
            _ => return err_at(0, "column does not match the definitions"),
        };
        if let Err(e) = read_message(&defs.reg, key_msg, kv, &key[2..], key_col) {
            return Err(within(e, 2, "key: "));
        }
        match value {
            None => {
                head.tombstone = true;
                value_col.append_nulls(1);
            }
            Some(value) => {
                let mut c = Cur::new(value);
                let vv = c.i16("value version")?;
                head.value_version = Some(vv);
                let before = value_col.len;
                if let Err(e) = read_message(&defs.reg, value_msg, vv, &value[2..], value_col) {
                    return Err(within(e, 2, "value: "));
                }
                if is_group {
                    if let Some(cp) = cp {
                        consumer_protocol(defs, cp, value_col, before)?;
                    }
                }
            }
        }
        col.close();
        debug_assert_eq!(col.len, rows + 1);
        Ok(())
    }

    fn push_metadata(&mut self, value: Option<&[u8]>, head: &mut RowHead) -> Result<(), ReadError> {
        let value = value.ok_or_else(|| ReadError::corrupt(0, "a metadata record without a value"))?;
        let mut pos = 0;
        let mut uv = |what: &str| -> Result<i16, ReadError> {
            let at = pos;
            let v = read_zigzag(value, &mut pos)
                .ok_or_else(|| ReadError::corrupt(at, format!("{what}: bad or cut unsigned varint")))?;
            i16::try_from(v).map_err(|_| ReadError::corrupt(at, format!("{what} {v} does not fit in 16 bits")))
        };
        let frame = uv("frame version")?;
        let api_key = uv("record type")?;
        let version = uv("record version")?;
        head.id = Some(api_key);
        head.value_version = Some(version);
        if frame != 1 {
            return err_at(0, format!("frame version {frame} (only frame version 1 is defined)"));
        }
        let Some(&t) = self.by_id.get(api_key) else {
            return err_at(0, format!("unknown record type {api_key}"));
        };
        let defs = self.defs;
        head.type_index = Some(t);
        let msg = &defs.reg.messages[self.types[t].value];
        let col = self.column(t);
        let used = match read_message(&defs.reg, msg, version, &value[pos..], col) {
            Ok(used) => used,
            Err(e) => return Err(within(e, pos, "")),
        };
        if pos + used != value.len() {
            return err_at(
                pos + used,
                format!("{} byte(s) of garbage after {}", value.len() - pos - used, msg.name),
            );
        }
        Ok(())
    }

    /// The table so far; the decoder starts over empty.
    pub fn finish(&mut self) -> RecordBatch {
        let schema = self.schema();
        let rows = self.rows;
        let mut arrays: Vec<ArrayRef> = self.finish_heads().into();
        let zeros = zeros_for(rows);
        for col in &mut self.cols {
            if col.len == 0 {
                // No row of this type: all nulls, every buffer a slice of one
                // zeroed buffer (nothing written value by value).
                arrays.push(null_array(&col.data_type(), rows, &zeros));
                continue;
            }
            if col.len < rows {
                col.append_nulls(rows - col.len);
            }
            arrays.push(Arc::new(col.finish()));
        }
        if self.error.is_empty() {
            // No row failed (the usual case): all nulls, over the zeroed buffer.
            arrays.push(null_array(&DataType::Utf8, rows, &zeros));
        } else {
            let missing = rows - self.error.len();
            self.error.append_nulls(missing);
            arrays.push(self.error.finish());
        }
        if let Some(j) = &mut self.json {
            arrays.push(j.finish());
        }
        self.rows = 0;
        // The columns are built to the schema, row for row.
        RecordBatch::try_new(schema.clone(), arrays).unwrap_or_else(|_| RecordBatch::new_empty(schema))
    }

    pub(crate) fn parts(&self) -> (&'d Definitions, &[RecordType], &[StructCol]) {
        (self.defs, &self.types, &self.cols)
    }
}

fn head_json(head: &RowHead) -> json::Head {
    json::Head {
        key_version: head.key_version,
        value_version: head.value_version,
        tombstone: head.tombstone,
    }
}

#[inline(always)]
fn push_opt_str(col: &mut Col, v: Option<&str>) {
    match (col, v) {
        (Col::Str(c), Some(s)) => {
            let _ = c.push(s.as_bytes());
        }
        (col, _) => col.push_null(),
    }
}

/// Decode the members' `subscription` and `assignment` bytes of the
/// `GroupMetadataValue` just read (row `row` of `value`) with the consumer
/// protocol, when the group's `protocolType` is "consumer": an int16
/// version, then the message at that version (a newer version is read as
/// the newest known one, as Kafka's `ConsumerProtocol` does). Bytes that
/// don't decode leave the decoded field null (the row is not an error).
fn consumer_protocol(
    defs: &Definitions,
    (sub, asg): (usize, usize),
    value: &mut StructCol,
    row: usize,
) -> Result<(), ReadError> {
    value.sync();
    let fields = value.fields.clone();
    let idx = |name: &str| fields.iter().position(|f| f.name() == name);
    let (Some(pt), Some(mi)) = (idx("protocolType"), idx("members")) else {
        return Ok(());
    };
    let is_consumer = match &value.children[pt] {
        Col::Str(c) => {
            let (a, b) = (c.offsets[row] as usize, c.offsets[row + 1] as usize);
            &c.data[a..b] == b"consumer"
        }
        _ => false,
    };
    let Col::List(members) = &mut value.children[mi] else {
        return Ok(());
    };
    let Col::Struct(item) = &mut members.child else {
        return Ok(());
    };
    item.sync();
    let names: Vec<String> = item.fields.iter().map(|f| f.name().clone()).collect();
    let pos = |n: &str| names.iter().position(|x| x == n);
    let (Some(si), Some(ai), Some(sd), Some(ad)) = (
        pos("subscription"),
        pos("assignment"),
        pos(SUBSCRIPTION_COLUMN),
        pos(ASSIGNMENT_COLUMN),
    ) else {
        return Ok(());
    };
    let start = item.children[sd].len();
    let end = item.len;
    for m in start..end {
        for (bytes_at, out_at, msg) in [(si, sd, sub), (ai, ad, asg)] {
            let bytes = match &item.children[bytes_at] {
                Col::Bin(c) if is_consumer && c.nulls.is_valid(m) => {
                    let (a, b) = (c.offsets[m] as usize, c.offsets[m + 1] as usize);
                    Some(c.data[a..b].to_vec())
                }
                _ => None,
            };
            let out = &mut item.children[out_at];
            let Col::Struct(out) = out else { continue };
            match bytes {
                None => out.append_nulls(1),
                Some(b) => {
                    let message = &defs.reg.messages[msg];
                    let mut c = Cur::new(&b);
                    let read = c.i16("version").and_then(|v| {
                        if v < message.valid.lo {
                            return err_at(0, format!("{} version {v} is not supported", message.name));
                        }
                        read_message(&defs.reg, message, v.min(message.valid.hi), &b[2..], out).map(|_| ())
                    });
                    if read.is_err() {
                        // As kafka-dump-log: bytes that don't decode stay
                        // bytes (`subscription`/`assignment`), the decoded
                        // field is null and the record is not an error.
                        out.truncate(m);
                        out.append_nulls(1);
                    }
                }
            }
        }
    }
    Ok(())
}
