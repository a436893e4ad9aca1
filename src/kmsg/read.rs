//! The table-driven reader: bytes of one message at one version, read as its
//! definition says, straight into the message's column builders.
//!
//! Kafka's rules (its generated `read` methods): non-flexible versions use
//! int16-length strings, int32-length bytes and int32-count arrays, -1 for
//! null; flexible versions use unsigned varints holding length + 1 (0 for
//! null) and end every struct with its tagged fields. A count or length is
//! checked against the bytes left before anything is read or reserved.
//! Recursion follows the definitions (at most `model::MAX_DEPTH` levels),
//! never the input.

use base64::Engine;

use super::columns::{BinCol, Col, StructCol};
use super::model::{FieldDef, FieldType, MessageDef, Prim, Registry};
use crate::memory;
use crate::varint::read_zigzag;

/// Why a message could not be read, and where (`at`: byte position in the
/// bytes being read): the crate's error for a slice (kind `Corrupt`).
pub use crate::error::LocalError as ReadError;

type Result<T> = std::result::Result<T, ReadError>;

pub(crate) struct Cur<'a> {
    pub b: &'a [u8],
    pub pos: usize,
}

impl<'a> Cur<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Cur { b, pos: 0 }
    }
    fn err<T>(&self, reason: impl Into<String>) -> Result<T> {
        Err(ReadError::corrupt(self.pos, reason.into()))
    }
    pub fn left(&self) -> usize {
        self.b.len() - self.pos
    }
    #[cold]
    #[inline(never)]
    fn short(&self, n: usize, what: &str) -> ReadError {
        ReadError::corrupt(
            self.pos,
            format!("{what} needs {n} bytes but only {} are left", self.left()),
        )
    }
    #[inline(always)]
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.left() {
            return Err(self.short(n, what));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    #[inline(always)]
    fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    #[inline(always)]
    pub fn i8(&mut self, what: &str) -> Result<i8> {
        Ok(i8::from_be_bytes(self.fixed(what)?))
    }
    #[inline(always)]
    pub fn i16(&mut self, what: &str) -> Result<i16> {
        Ok(i16::from_be_bytes(self.fixed(what)?))
    }
    #[inline(always)]
    pub fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_be_bytes(self.fixed(what)?))
    }
    #[cold]
    #[inline(never)]
    fn bad_varint(&self, what: &str) -> ReadError {
        ReadError::corrupt(self.pos, format!("{what}: bad or cut unsigned varint"))
    }
    #[inline(always)]
    pub fn uvarint(&mut self, what: &str) -> Result<u32> {
        let mut p = self.pos;
        match read_zigzag(self.b, &mut p) {
            Some(v) => {
                self.pos = p;
                Ok(v)
            }
            None => Err(self.bad_varint(what)),
        }
    }
}

/// Kafka's text form of a UUID: URL-safe base64 of its 16 bytes, no padding.
pub fn uuid_text(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[inline]
fn push_bytes(col: &mut BinCol, v: &[u8], cur: &Cur<'_>) -> Result<()> {
    col.push(v).map_err(|reason| ReadError::corrupt(cur.pos, reason))
}

/// Append a string as read: `BinCol::make_text` turns invalid UTF-8 into
/// replacement characters, as Java decodes it, when the column is finished.
#[inline]
pub(crate) fn push_str(col: &mut BinCol, v: &[u8], cur: &Cur<'_>) -> Result<()> {
    push_bytes(col, v, cur)
}

/// Read one message (its root struct) at `version` into `col` (one row).
/// Returns the bytes consumed; on error `col` may hold a partial row (the
/// caller truncates it).
#[inline]
pub fn read_message(
    reg: &Registry,
    msg: &MessageDef,
    version: i16,
    bytes: &[u8],
    col: &mut StructCol,
) -> Result<usize> {
    if !msg.valid.contains(version) {
        return Err(ReadError::corrupt(
            0,
            format!("{} version {version} is not one of {}", msg.name, msg.valid),
        ));
    }
    let mut cur = Cur::new(bytes);
    let flexible = msg.flexible.contains(version);
    read_struct(reg, msg.root, version, flexible, &mut cur, col)?;
    Ok(cur.pos)
}

/// A struct's reading at one version, resolved once per column: when every
/// field the version has is a primitive (string, bytes and UUID included)
/// and none is tagged, the row is read by `read_flat` in one pass over a
/// list of steps, with no error built. Anything else, or bytes that pass
/// doesn't accept, goes to the general reader, which says why.
pub(crate) struct Plan {
    id: usize,
    v: i16,
    flex: bool,
    /// `None` when the struct is not flat at this version.
    steps: Option<Box<[Step]>>,
    /// The children a flat read leaves behind: the fields the version
    /// lacks, and the unknown tags of a version that is not flexible (all
    /// null; see `StructCol::sync`).
    lagging: Box<[usize]>,
}

impl Plan {
    pub(crate) fn lagging(&self) -> &[usize] {
        &self.lagging
    }
}

#[derive(Clone, Copy)]
enum Step {
    /// The field is not in this version: null.
    Absent,
    /// A primitive read into its column's builder; whether a null
    /// length is accepted (a nullable field, or records).
    Value { null_ok: bool },
}

/// Whether `col` is the builder `columns::data_type` makes for `p`.
fn prim_matches(p: Prim, col: &Col) -> bool {
    matches!(
        (p, col),
        (Prim::Bool, Col::Bool(..))
            | (Prim::Int8, Col::I8(_))
            | (Prim::Int16, Col::I16(_))
            | (Prim::Uint16, Col::U16(_))
            | (Prim::Int32, Col::I32(_))
            | (Prim::Uint32, Col::U32(_))
            | (Prim::Int64, Col::I64(_))
            | (Prim::Float64, Col::F64(_))
            | (Prim::Uuid, Col::Uuid(_))
            | (Prim::String, Col::Str(_))
            | (Prim::Bytes | Prim::Records, Col::Bin(_))
    )
}

fn flat_steps(reg: &Registry, id: usize, v: i16, flex: bool, col: &StructCol) -> Option<Box<[Step]>> {
    let def = &reg.structs[id];
    if def.fields.len() > col.children.len() {
        return None;
    }
    let mut steps = Vec::with_capacity(def.fields.len());
    for (f, child) in def.fields.iter().zip(&col.children) {
        if !f.versions.contains(v) {
            steps.push(Step::Absent);
            continue;
        }
        if flex && f.is_tagged_in(v) {
            return None;
        }
        match f.ty {
            FieldType::Prim(p) if prim_matches(p, child) => steps.push(Step::Value {
                null_ok: f.nullable.contains(v) || p == Prim::Records,
            }),
            _ => return None,
        }
    }
    Some(steps.into_boxed_slice())
}

/// The index in `col.plans` of the plan for (`id`, `v`, `flex`), built on
/// first use (a column meets a handful of versions).
#[inline]
fn plan_index(reg: &Registry, id: usize, v: i16, flex: bool, col: &mut StructCol) -> usize {
    if let Some(i) = col.plans.iter().position(|p| p.id == id && p.v == v && p.flex == flex) {
        return i;
    }
    let steps = flat_steps(reg, id, v, flex, col);
    let mut lagging = Vec::new();
    if let Some(steps) = &steps {
        lagging.extend(
            steps
                .iter()
                .enumerate()
                .filter(|(_, s)| matches!(s, Step::Absent))
                .map(|(i, _)| i),
        );
        if !flex && col.children.len() > steps.len() {
            lagging.push(steps.len());
        }
    }
    col.plans.push(Plan {
        id,
        v,
        flex,
        steps,
        lagging: lagging.into_boxed_slice(),
    });
    col.plans.len() - 1
}

#[inline(always)]
fn flat_take<'a>(b: &'a [u8], pos: &mut usize, n: usize) -> Option<&'a [u8]> {
    let end = pos.checked_add(n)?;
    let s = b.get(*pos..end)?;
    *pos = end;
    Some(s)
}

#[inline(always)]
fn flat_fixed<const N: usize>(b: &[u8], pos: &mut usize) -> Option<[u8; N]> {
    let s = b.get(*pos..)?.first_chunk::<N>()?;
    *pos += N;
    Some(*s)
}

/// `length` without the error: `Some(None)` for a null length.
#[inline(always)]
fn flat_length(b: &[u8], pos: &mut usize, flex: bool, wide: bool) -> Option<Option<usize>> {
    if flex {
        let n = read_zigzag(b, pos)?;
        Some(if n == 0 { None } else { Some(n as usize - 1) })
    } else {
        let n = if wide {
            i32::from_be_bytes(flat_fixed(b, pos)?)
        } else {
            i16::from_be_bytes(flat_fixed(b, pos)?) as i32
        };
        Some(if n < 0 { None } else { Some(n as usize) })
    }
}

/// One value of a flat struct's row into `col`, as `read_prim` reads it;
/// `None` (nothing pushed) for anything `read_prim` would not accept.
#[inline(always)]
fn flat_value(null_ok: bool, flex: bool, b: &[u8], pos: &mut usize, col: &mut Col) -> Option<()> {
    match col {
        Col::Bool(v, nulls) => {
            let [x] = flat_fixed::<1>(b, pos)?;
            v.append(x != 0);
            nulls.append_non_null();
        }
        Col::I8(c) => c.push(i8::from_be_bytes(flat_fixed(b, pos)?)),
        Col::I16(c) => c.push(i16::from_be_bytes(flat_fixed(b, pos)?)),
        Col::U16(c) => c.push(u16::from_be_bytes(flat_fixed(b, pos)?)),
        Col::I32(c) => c.push(i32::from_be_bytes(flat_fixed(b, pos)?)),
        Col::U32(c) => c.push(u32::from_be_bytes(flat_fixed(b, pos)?)),
        Col::I64(c) => c.push(i64::from_be_bytes(flat_fixed(b, pos)?)),
        Col::F64(c) => c.push(f64::from_be_bytes(flat_fixed(b, pos)?)),
        Col::Uuid(c) => c.push(flat_fixed(b, pos)?),
        Col::Str(c) => match flat_length(b, pos, flex, false)? {
            Some(n) => c.push(flat_take(b, pos, n)?).ok()?,
            None if null_ok => c.nulls_push(),
            None => return None,
        },
        Col::Bin(c) => match flat_length(b, pos, flex, true)? {
            Some(n) => c.push(flat_take(b, pos, n)?).ok()?,
            None if null_ok => c.nulls_push(),
            None => return None,
        },
        Col::List(_) | Col::Struct(_) => return None,
    }
    Some(())
}

/// Read one row of a flat struct (see `Plan`) into its children; the fields
/// the version lacks are left behind (`Plan::lagging`). Returns the
/// position after the row. `Err(k)`: the bytes were not accepted, and the
/// first `k` children may hold a value of this row.
#[inline(always)]
fn read_flat(
    steps: &[Step],
    flex: bool,
    b: &[u8],
    mut pos: usize,
    children: &mut [Col],
) -> std::result::Result<usize, usize> {
    let n = steps.len();
    for (k, (step, child)) in steps.iter().zip(children.iter_mut()).enumerate() {
        match *step {
            Step::Absent => {}
            Step::Value { null_ok } => flat_value(null_ok, flex, b, &mut pos, child).ok_or(k)?,
        }
    }
    if flex {
        // No tagged fields (with them, the general reader).
        if read_zigzag(b, &mut pos) != Some(0) {
            return Err(n);
        }
        if let Some(Col::List(list)) = children.get_mut(n) {
            list.close().map_err(|_| n)?;
        }
    }
    Ok(pos)
}

/// Read one row of `col` from `cur` with plan `p` when it is flat, and
/// close it. `Err(())`: the plan is not flat or the bytes were not
/// accepted, and nothing of the row is left behind.
#[inline(always)]
fn read_planned(p: usize, cur: &mut Cur<'_>, col: &mut StructCol) -> std::result::Result<(), ()> {
    if col.lazy.is_some_and(|l| l != p) {
        col.sync();
    }
    let StructCol {
        plans, children, len, ..
    } = col;
    let plan = &plans[p];
    let Some(steps) = &plan.steps else {
        return Err(());
    };
    match read_flat(steps, plan.flex, cur.b, cur.pos, children) {
        Ok(pos) => {
            cur.pos = pos;
            let lazy = !plan.lagging.is_empty();
            col.close();
            if lazy {
                col.lazy = Some(p);
            }
            Ok(())
        }
        Err(k) => {
            // Cut the values pushed back off.
            let rows = *len;
            for c in &mut children[..k] {
                c.truncate(rows);
            }
            Err(())
        }
    }
}

/// The plan of a struct at one version, when it is flat: `read_flat_row`
/// reads rows with it.
pub(crate) fn flat_plan(reg: &Registry, msg: &MessageDef, version: i16, col: &mut StructCol) -> Option<usize> {
    if !msg.valid.contains(version) {
        return None;
    }
    let flex = msg.flexible.contains(version);
    let p = plan_index(reg, msg.root, version, flex, col);
    col.plans[p].steps.is_some().then_some(p)
}

/// Read one row of `col` (a message's root struct) from `bytes` with a
/// flat plan from `flat_plan`; `false`, with nothing of the row left
/// behind, when the bytes are not accepted (the general reader says why).
#[inline(always)]
pub(crate) fn read_flat_row(col: &mut StructCol, p: usize, bytes: &[u8]) -> bool {
    read_planned(p, &mut Cur::new(bytes), col).is_ok()
}

/// The most bytes a variable-length column reserves ahead, from its first
/// block (see `flat_column`); past that it grows as it fills.
const LEARNT_MOST: usize = 64 << 20;

/// One field of a flat struct (see `Plan`) read for a block of rows, row
/// `i` from `rows[i]` at `pos[i]` (moved past the value): one loop per
/// field, with the column's type settled once for the block. `None` when a
/// row's bytes are not accepted (values of the rows before it may be left
/// in `col`).
#[inline(never)]
fn flat_column(step: Step, flex: bool, rows: &[&[u8]], room: usize, pos: &mut [usize], col: &mut Col) -> Option<()> {
    let Step::Value { null_ok } = step else {
        return Some(());
    };
    let n = rows.len();
    macro_rules! fixed {
        ($c:expr, $t:ty) => {{
            $c.vals.reserve(n);
            for (b, p) in rows.iter().zip(pos.iter_mut()) {
                $c.vals.push(<$t>::from_be_bytes(flat_fixed(b, p)?));
            }
            $c.nulls.append_n_non_nulls(n);
        }};
    }
    macro_rules! var {
        ($c:expr, $wide:expr) => {{
            $c.offsets.reserve(n);
            let first = $c.data.is_empty();
            for (b, p) in rows.iter().zip(pos.iter_mut()) {
                match flat_length(b, p, flex, $wide)? {
                    Some(len) => {
                        $c.push_prefix(b.get(*p..)?, len).ok()?;
                        *p += len;
                    }
                    None if null_ok => $c.nulls_push(),
                    None => return None,
                }
            }
            if first && room > n && !$c.data.is_empty() {
                // Room for the rows to come, learnt from this block, in
                // pooled memory: the bytes neither grow copy by copy into
                // fresh memory nor fault it in. At most `LEARNT_MOST`: a
                // block of long values before many short ones must not
                // reserve what the input could never fill.
                let want = memory::learnt_room(memory::per_row($c.data.len(), n), room - n, 64, LEARNT_MOST);
                let mut bigger = memory::take_vec($c.data.len() + want);
                bigger.extend_from_slice(&$c.data);
                $c.data = bigger;
            }
        }};
    }
    match col {
        Col::Bool(v, nulls) => {
            for (b, p) in rows.iter().zip(pos.iter_mut()) {
                let [x] = flat_fixed::<1>(b, p)?;
                v.append(x != 0);
            }
            nulls.append_n_non_nulls(n);
        }
        Col::I8(c) => fixed!(c, i8),
        Col::I16(c) => fixed!(c, i16),
        Col::U16(c) => fixed!(c, u16),
        Col::I32(c) => fixed!(c, i32),
        Col::U32(c) => fixed!(c, u32),
        Col::I64(c) => fixed!(c, i64),
        Col::F64(c) => fixed!(c, f64),
        Col::Uuid(c) => {
            c.vals.reserve(n);
            for (b, p) in rows.iter().zip(pos.iter_mut()) {
                c.vals.push(flat_fixed(b, p)?);
            }
            c.nulls.append_n_non_nulls(n);
        }
        Col::Str(c) => var!(c, false),
        Col::Bin(c) => var!(c, true),
        Col::List(_) | Col::Struct(_) => return None,
    }
    Some(())
}

/// Read a block of rows of `col` (a message's root struct), row `i` from
/// `rows[i]`, with the flat plan `p` from `flat_plan`: field by field over
/// the block (`pos` is scratch room for the rows' positions; `room`: the
/// rows this block starts, a variable-length column's bytes are sized for
/// on its first block). `false`,
/// with nothing of the block left behind, when a row's bytes are not
/// accepted (the caller reads the rows one by one to say which and why).
pub(crate) fn read_flat_block(
    col: &mut StructCol,
    p: usize,
    rows: &[&[u8]],
    room: usize,
    pos: &mut Vec<usize>,
) -> bool {
    if col.lazy.is_some_and(|l| l != p) {
        col.sync();
    }
    let StructCol {
        plans, children, len, ..
    } = col;
    let plan = &plans[p];
    let Some(steps) = &plan.steps else {
        return false;
    };
    let start = *len;
    let n = rows.len();
    pos.clear();
    pos.resize(n, 0);
    let read = (|| {
        for (step, child) in steps.iter().zip(children.iter_mut()) {
            flat_column(*step, plan.flex, rows, room, pos, child)?;
        }
        if plan.flex {
            // No tagged fields (with them, the general reader).
            for (b, p) in rows.iter().zip(pos.iter_mut()) {
                if read_zigzag(b, p) != Some(0) {
                    return None;
                }
            }
            if let Some(Col::List(list)) = children.get_mut(steps.len()) {
                list.close_n_empty(n).ok()?;
            }
        }
        Some(())
    })();
    if read.is_none() {
        for c in children.iter_mut() {
            c.truncate(start);
        }
        return false;
    }
    let lazy = !plan.lagging.is_empty();
    col.close_n(n);
    if lazy {
        col.lazy = Some(p);
    }
    true
}

fn read_struct(reg: &Registry, id: usize, v: i16, flex: bool, cur: &mut Cur<'_>, col: &mut StructCol) -> Result<()> {
    let p = plan_index(reg, id, v, flex, col);
    if read_planned(p, cur, col).is_ok() {
        return Ok(());
    }
    col.sync();
    read_struct_general(reg, id, v, flex, cur, col)
}

fn read_struct_general(
    reg: &Registry,
    id: usize,
    v: i16,
    flex: bool,
    cur: &mut Cur<'_>,
    col: &mut StructCol,
) -> Result<()> {
    let def = &reg.structs[id];
    let mut has_tagged = false;
    for (i, f) in def.fields.iter().enumerate() {
        let child = &mut col.children[i];
        if !f.versions.contains(v) {
            child.push_null();
        } else if flex && f.is_tagged_in(v) {
            has_tagged = true;
        } else {
            read_field(reg, f, &f.ty, v, flex, false, cur, child)?;
        }
    }
    let n = def.fields.len();
    if flex {
        let mut seen: u128 = 0;
        let count = cur.uvarint("tagged field count")? as usize;
        if count > cur.left() {
            return cur.err(format!(
                "{count} tagged fields claimed but only {} bytes are left",
                cur.left()
            ));
        }
        for _ in 0..count {
            let tag = cur.uvarint("tag")?;
            let size = cur.uvarint("tagged field size")? as usize;
            let data = cur.take(size, "a tagged field")?;
            let known = def
                .fields
                .iter()
                .position(|f| f.tag == Some(tag) && f.is_tagged_in(v) && f.versions.contains(v));
            match known {
                Some(i) => {
                    let f = &def.fields[i];
                    if seen & (1u128 << i) != 0 {
                        return cur.err(format!("tag {tag} ({}) appears twice", f.name));
                    }
                    let mut sub = Cur::new(data);
                    read_field(reg, f, &f.ty, v, true, true, &mut sub, &mut col.children[i])
                        .map_err(|e| ReadError::corrupt(cur.pos - size + e.at, format!("{}: {}", f.name, e.reason)))?;
                    if sub.left() != 0 {
                        return cur.err(format!("tagged field {} has {} bytes left over", f.name, sub.left()));
                    }
                    seen |= 1u128 << i;
                }
                None => {
                    if let Col::List(list) = &mut col.children[n] {
                        if let Col::Struct(item) = &mut list.child {
                            let (first, rest) = item.children.split_at_mut(1);
                            if let (Col::U32(tags), Some(Col::Bin(bytes))) = (&mut first[0], rest.first_mut()) {
                                tags.push(tag);
                                push_bytes(bytes, data, cur)?;
                                item.close();
                            }
                        }
                    }
                }
            }
        }
        if let Col::List(list) = &mut col.children[n] {
            list.close().map_err(|reason| ReadError::corrupt(cur.pos, reason))?;
        }
        if has_tagged {
            for (i, f) in def.fields.iter().enumerate() {
                if f.versions.contains(v) && f.is_tagged_in(v) && seen & (1u128 << i) == 0 {
                    push_default(reg, f, &f.ty, v, &mut col.children[i]);
                }
            }
        }
    } else if let Some(c) = col.children.get_mut(n) {
        c.push_null();
    }
    col.close();
    Ok(())
}

/// A length or count: int16/int32 (non-flexible) or unsigned varint - 1
/// (flexible); `None` for null.
#[inline]
fn length(cur: &mut Cur<'_>, flex: bool, wide: bool, what: &str) -> Result<Option<usize>> {
    if flex {
        let n = cur.uvarint(what)?;
        Ok(if n == 0 { None } else { Some(n as usize - 1) })
    } else {
        let n = if wide { cur.i32(what)? } else { cur.i16(what)? as i32 };
        if n < 0 {
            Ok(None)
        } else {
            Ok(Some(n as usize))
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn read_field(
    reg: &Registry,
    f: &FieldDef,
    ty: &FieldType,
    v: i16,
    flex: bool,
    tagged: bool,
    cur: &mut Cur<'_>,
    col: &mut Col,
) -> Result<()> {
    let nullable = f.nullable.contains(v);
    let null_or_fail = |cur: &Cur<'_>, col: &mut Col| {
        if nullable {
            col.push_null();
            Ok(())
        } else {
            cur.err(format!("non-nullable field {} was serialized as null", f.name))
        }
    };
    match (ty, col) {
        (FieldType::Prim(p), col) => read_prim(*p, f, nullable, flex, cur, col),
        (FieldType::Struct(s), Col::Struct(sc)) => {
            // A nullable struct has a presence marker: int8 (-1 null, 1
            // present), or as a tagged field an unsigned varint (0 null).
            if nullable {
                let null = if tagged {
                    cur.uvarint(&f.name)? == 0
                } else {
                    cur.i8(&f.name)? < 0
                };
                if null {
                    sc.append_nulls(1);
                    return Ok(());
                }
            }
            read_struct(reg, *s, v, flex, cur, sc)
        }
        (FieldType::Array(inner), col) => {
            let Col::List(list) = col else {
                return cur.err("column does not match the definitions");
            };
            let Some(count) = length(cur, flex, true, &f.name)? else {
                return null_or_fail(cur, col);
            };
            if count > cur.left() {
                return cur.err(format!(
                    "{}: {count} elements claimed but only {} bytes are left",
                    f.name,
                    cur.left()
                ));
            }
            for _ in 0..count {
                match &**inner {
                    FieldType::Prim(p) => read_prim(*p, f, false, flex, cur, &mut list.child)?,
                    FieldType::Struct(s) => {
                        let Col::Struct(sc) = &mut list.child else {
                            return cur.err("column does not match the definitions");
                        };
                        read_struct(reg, *s, v, flex, cur, sc)?
                    }
                    FieldType::Array(_) => return cur.err("arrays of arrays are not part of the format"),
                }
            }
            list.close().map_err(|reason| ReadError::corrupt(cur.pos, reason))
        }
        _ => cur.err("column does not match the definitions"),
    }
}

#[inline]
fn read_prim(p: Prim, f: &FieldDef, nullable: bool, flex: bool, cur: &mut Cur<'_>, col: &mut Col) -> Result<()> {
    let name = f.name.as_str();
    match (p, col) {
        (Prim::Bool, Col::Bool(v, nulls)) => {
            let b = cur.i8(name)?;
            v.append(b != 0);
            nulls.append_non_null();
        }
        (Prim::Int8, Col::I8(c)) => c.push(cur.i8(name)?),
        (Prim::Int16, Col::I16(c)) => c.push(cur.i16(name)?),
        (Prim::Uint16, Col::U16(c)) => c.push(u16::from_be_bytes(cur.fixed(name)?)),
        (Prim::Int32, Col::I32(c)) => c.push(cur.i32(name)?),
        (Prim::Uint32, Col::U32(c)) => c.push(u32::from_be_bytes(cur.fixed(name)?)),
        (Prim::Int64, Col::I64(c)) => c.push(i64::from_be_bytes(cur.fixed(name)?)),
        (Prim::Float64, Col::F64(c)) => c.push(f64::from_be_bytes(cur.fixed(name)?)),
        (Prim::Uuid, Col::Uuid(c)) => c.push(cur.fixed(name)?),
        (Prim::String, Col::Str(c)) => match length(cur, flex, false, name)? {
            Some(n) => {
                let b = cur.take(n, name)?;
                push_str(c, b, cur)?;
            }
            None if nullable => c.nulls_push(),
            None => return cur.err(format!("non-nullable field {name} was serialized as null")),
        },
        (Prim::Bytes | Prim::Records, Col::Bin(c)) => match length(cur, flex, true, name)? {
            Some(n) => {
                let b = cur.take(n, name)?;
                push_bytes(c, b, cur)?;
            }
            None if nullable || p == Prim::Records => c.nulls_push(),
            None => return cur.err(format!("non-nullable field {name} was serialized as null")),
        },
        _ => return cur.err("column does not match the definitions"),
    }
    Ok(())
}

impl BinCol {
    #[inline(always)]
    fn nulls_push(&mut self) {
        let end = self.offsets.last().copied().unwrap_or(0);
        self.offsets.push(end);
        self.nulls.append_null();
    }
}

/// Parse an integer default as Kafka's generator does (decimal, `0x` hex).
pub(crate) fn int_default(text: Option<&str>) -> i64 {
    let Some(t) = text else { return 0 };
    let t = t.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).unwrap_or(0)
    } else {
        body.parse::<i64>().unwrap_or(0)
    };
    if neg {
        -v
    } else {
        v
    }
}

/// Append the value Kafka's reader gives a field that is absent from the
/// bytes although the version has it (an omitted tagged field): the
/// definition's `default`, else the type's (0, false, "", empty, zero UUID,
/// empty list, null records).
pub(crate) fn push_default(reg: &Registry, f: &FieldDef, ty: &FieldType, v: i16, col: &mut Col) {
    let d = f.default.as_deref();
    let is_null = d == Some("null");
    match (ty, col) {
        (_, col) if is_null => col.push_null(),
        (FieldType::Prim(p), col) => match (p, col) {
            (Prim::Bool, Col::Bool(b, nulls)) => {
                b.append(d == Some("true"));
                nulls.append_non_null();
            }
            (Prim::Int8, Col::I8(c)) => c.push(int_default(d) as i8),
            (Prim::Int16, Col::I16(c)) => c.push(int_default(d) as i16),
            (Prim::Uint16, Col::U16(c)) => c.push(int_default(d) as u16),
            (Prim::Int32, Col::I32(c)) => c.push(int_default(d) as i32),
            (Prim::Uint32, Col::U32(c)) => c.push(int_default(d) as u32),
            (Prim::Int64, Col::I64(c)) => c.push(int_default(d)),
            (Prim::Float64, Col::F64(c)) => c.push(d.and_then(|t| t.parse().ok()).unwrap_or(0.0)),
            (Prim::String, Col::Str(c)) => {
                let _ = c.push(d.unwrap_or("").as_bytes());
            }
            (Prim::Uuid, Col::Uuid(c)) => c.push([0; 16]),
            (Prim::Bytes, Col::Bin(c)) => {
                let _ = c.push(&[]);
            }
            (_, col) => col.push_null(),
        },
        (FieldType::Array(_), Col::List(list)) => {
            let _ = list.close();
        }
        (FieldType::Struct(s), Col::Struct(sc)) => {
            sc.sync();
            let def = &reg.structs[*s];
            for (i, sf) in def.fields.iter().enumerate() {
                if sf.versions.contains(v) {
                    push_default(reg, sf, &sf.ty, v, &mut sc.children[i]);
                } else {
                    sc.children[i].push_null();
                }
            }
            for c in sc.children.iter_mut().skip(def.fields.len()) {
                c.push_null();
            }
            sc.close();
        }
        (_, col) => col.push_null(),
    }
}
