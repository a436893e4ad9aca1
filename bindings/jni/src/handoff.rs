//! Record batches to the JVM in exactly the Arrow schema Spark asked for,
//! and, by default, without copying their buffers.
//!
//! The Java side derives the read schema's Arrow form with Spark's own
//! `ArrowUtils.toArrowSchema` and sends it once (IPC schema message bytes).
//! [`Conform`] turns each of the core's batches into that schema: columns
//! picked by name, relabelled where only names, nullability or a time zone
//! differ (the same bytes), cast where the layout differs (e.g. large binary),
//! and copied where Arrow Java could not take the buffers as they are (an
//! array offset, a bit offset in a validity bitmap, a buffer not 8-byte
//! aligned).
//!
//! The zero-copy hand-off ([`Handed`]) keeps the conformed columns alive
//! behind a handle and describes them as Arrow IPC does, without the bytes:
//! the row count, one `(length, null count)` node per field in pre-order,
//! and one `(address, size)` per buffer in IPC buffer order. Java wraps each
//! buffer as a foreign allocation whose release drops the handle
//! (`Native.release`), and loads them with `VectorLoader`, as Arrow's C data
//! importer does. [`live_handles`] counts what Java still holds.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use arrow_array::{make_array, Array, ArrayRef, RecordBatch};
use arrow_data::transform::MutableArrayData;
use arrow_data::ArrayData;
use arrow_schema::{DataType, FieldRef, Schema, SchemaRef};

use crate::Failure;

/// Native objects the JVM holds a handle to (readers and handed batches).
static LIVE: AtomicI64 = AtomicI64::new(0);

/// Count one more handle held by the JVM.
pub(crate) fn handle_opened() {
    LIVE.fetch_add(1, Ordering::Relaxed);
}

/// Count one handle the JVM gave back.
pub(crate) fn handle_closed() {
    LIVE.fetch_sub(1, Ordering::Relaxed);
}

/// Handles the JVM holds now (`Native.liveHandles`, for leak tests).
pub(crate) fn live_handles() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// The alignment Arrow Java expects of every buffer it reads.
const ALIGN: usize = 8;

/// The Spark schema's Arrow form (IPC schema message bytes from Java's `Schema.serializeAsMessage`).
pub(crate) fn schema_from_java(bytes: &[u8]) -> Result<SchemaRef, Failure> {
    arrow_ipc::convert::try_schema_from_ipc_buffer(bytes)
        .map(Arc::new)
        .map_err(|e| Failure::Core(format!("the read schema from the JVM is not an Arrow IPC schema: {e}")))
}

/// Whether values of `a` and `b` have the same buffers (only names,
/// nullability, metadata or a time zone differ).
fn same_layout(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Timestamp(x, _), DataType::Timestamp(y, _)) => x == y,
        (DataType::List(x), DataType::List(y)) => same_layout(x.data_type(), y.data_type()),
        (DataType::Struct(x), DataType::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(f, g)| f.name() == g.name() && same_layout(f.data_type(), g.data_type()))
        }
        // views hold buffer indices Arrow Java of Spark 4.0 does not read
        (DataType::BinaryView | DataType::Utf8View, _) => false,
        _ => a == b,
    }
}

/// `data` typed as `target` (of the same layout): the same buffers under the target's names.
fn relabel(data: ArrayData, target: &DataType) -> ArrayData {
    if data.data_type() == target {
        return data;
    }
    let children: Vec<ArrayData> = match target {
        DataType::List(item) => data
            .child_data()
            .iter()
            .map(|c| relabel(c.clone(), item.data_type()))
            .collect(),
        DataType::Struct(fields) => data
            .child_data()
            .iter()
            .zip(fields.iter())
            .map(|(c, f)| relabel(c.clone(), f.data_type()))
            .collect(),
        _ => data.child_data().to_vec(),
    };
    let builder = data.into_builder().data_type(target.clone()).child_data(children);
    // SAFETY: `same_layout` held for these types: the buffers, lengths and
    // children are those of a valid array whose type differs only in names,
    // nullability flags or a time zone, which no buffer depends on.
    unsafe { builder.build_unchecked() }
}

/// Whether Arrow Java could not read `data`'s buffers in place.
fn needs_copy(data: &ArrayData) -> bool {
    data.offset() != 0
        || data
            .nulls()
            .is_some_and(|n| n.offset() != 0 || !(n.buffer().as_ptr() as usize).is_multiple_of(ALIGN))
        || data
            .buffers()
            .iter()
            .any(|b| !b.is_empty() && !(b.as_ptr() as usize).is_multiple_of(ALIGN))
        || data.child_data().iter().any(needs_copy)
}

/// `data` in fresh buffers (offset 0, 64-byte aligned).
fn copied(data: &ArrayData) -> Result<ArrayData, Failure> {
    let mut out = MutableArrayData::new(vec![data], false, data.len());
    out.try_extend(0, 0, data.len())
        .map_err(|e| Failure::Core(format!("copying a column for the JVM: {e}")))?;
    Ok(out.freeze())
}

/// Turns the core's batches into one Spark read schema.
#[derive(Debug, Clone)]
pub(crate) struct Conform {
    target: SchemaRef,
}

impl Conform {
    pub(crate) fn new(target: SchemaRef) -> Self {
        Conform { target }
    }

    /// The columns of `batch` as the target's fields, in the target's order.
    pub(crate) fn columns(&self, batch: &RecordBatch) -> Result<Vec<ArrayData>, Failure> {
        self.target
            .fields()
            .iter()
            .map(|field| self.column(batch, field))
            .collect()
    }

    fn column(&self, batch: &RecordBatch, field: &FieldRef) -> Result<ArrayData, Failure> {
        let Some(column) = batch.column_by_name(field.name()) else {
            return Err(Failure::Core(format!(
                "the read schema asks for column {:?}, which the scan did not build (it built {:?})",
                field.name(),
                batch.schema().fields().iter().map(|f| f.name()).collect::<Vec<_>>()
            )));
        };
        let target = field.data_type();
        let data = if same_layout(column.data_type(), target) {
            relabel(column.to_data(), target)
        } else {
            arrow_cast::cast(column, target)
                .map_err(|e| {
                    Failure::Core(format!(
                        "column {:?}: the scan's {} can't be read as Spark's {target}: {e}",
                        field.name(),
                        column.data_type()
                    ))
                })?
                .to_data()
        };
        if needs_copy(&data) {
            copied(&data)
        } else {
            Ok(data)
        }
    }

    /// `batch` as a record batch of the target schema (for the IPC transport).
    pub(crate) fn batch(&self, batch: &RecordBatch) -> Result<RecordBatch, Failure> {
        let columns: Vec<ArrayRef> = self.columns(batch)?.into_iter().map(make_array).collect();
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        RecordBatch::try_new_with_options(self.target.clone(), columns, &options)
            .map_err(|e| Failure::Core(format!("building a batch of the read schema: {e}")))
    }

    pub(crate) fn schema(&self) -> &Schema {
        &self.target
    }
}

/// One conformed batch the JVM reads in place: alive until Java releases its handle.
pub(crate) struct Handed {
    #[allow(dead_code)] // owned for the buffers' sake: Java reads them through their addresses
    columns: Vec<ArrayData>,
}

impl Handed {
    /// Hand `columns` (of `rows` rows) over: the handle and its description,
    /// `[handle, rows, node count, (length, null count)…, buffer count, (address, size)…]`.
    pub(crate) fn hand_over(rows: usize, columns: Vec<ArrayData>) -> Result<Vec<i64>, Failure> {
        let mut nodes: Vec<i64> = Vec::new();
        let mut buffers: Vec<i64> = Vec::new();
        for column in &columns {
            describe(column, &mut nodes, &mut buffers)?;
        }
        let mut out = Vec::with_capacity(4 + nodes.len() + buffers.len());
        out.push(0); // the handle, below
        out.push(as_long(rows)?);
        out.push(as_long(nodes.len() / 2)?);
        out.extend_from_slice(&nodes);
        out.push(as_long(buffers.len() / 2)?);
        out.extend_from_slice(&buffers);
        let handle = Box::into_raw(Box::new(Handed { columns })) as i64;
        handle_opened();
        out[0] = handle;
        Ok(out)
    }

    /// Drop a handle from [`Handed::hand_over`].
    ///
    /// # Safety
    /// `handle` came from `hand_over` and is released once.
    pub(crate) unsafe fn release(handle: i64) {
        if handle != 0 {
            // SAFETY: per this function's contract.
            drop(unsafe { Box::from_raw(handle as *mut Handed) });
            handle_closed();
        }
    }
}

fn as_long(n: usize) -> Result<i64, Failure> {
    i64::try_from(n).map_err(|_| Failure::Core(format!("{n} does not fit a Java long")))
}

/// Push `data`'s nodes and buffers, in pre-order and IPC buffer order.
fn describe(data: &ArrayData, nodes: &mut Vec<i64>, buffers: &mut Vec<i64>) -> Result<(), Failure> {
    match data.data_type() {
        DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Date32
        | DataType::Timestamp(_, _)
        | DataType::Duration(_)
        | DataType::Decimal128(_, _)
        | DataType::Binary
        | DataType::Utf8
        | DataType::LargeBinary
        | DataType::LargeUtf8
        | DataType::List(_)
        | DataType::Map(_, _)
        | DataType::Struct(_) => {}
        other => {
            return Err(Failure::Core(format!(
                "Arrow type {other} is not handed to the JVM (set spark.kafkabatch.arrowTransfer=ipc)"
            )))
        }
    }
    nodes.push(as_long(data.len())?);
    nodes.push(as_long(data.null_count())?);
    // validity first; none (size 0) when there is no null: Arrow Java then makes an all-set bitmap
    match data.nulls().filter(|n| n.null_count() > 0) {
        Some(n) => push_buffer(buffers, n.buffer().as_ptr(), n.buffer().len())?,
        None => push_buffer(buffers, std::ptr::null(), 0)?,
    }
    for buffer in data.buffers() {
        push_buffer(buffers, buffer.as_ptr(), buffer.len())?;
    }
    for child in data.child_data() {
        describe(child, nodes, buffers)?;
    }
    Ok(())
}

fn push_buffer(buffers: &mut Vec<i64>, at: *const u8, size: usize) -> Result<(), Failure> {
    buffers.push(if size == 0 { 0 } else { at as usize as i64 });
    buffers.push(as_long(size)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BinaryArray, Int32Array, LargeBinaryArray, TimestampMicrosecondArray};
    use arrow_schema::{Field, TimeUnit};

    fn column(batch: &RecordBatch, name: &str) -> ArrayRef {
        batch.column_by_name(name).unwrap().clone()
    }

    fn spark_schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("value", DataType::Binary, true),
            Field::new(
                "timestamp",
                DataType::Timestamp(TimeUnit::Microsecond, Some("Europe/Paris".into())),
                true,
            ),
        ]))
    }

    #[test]
    fn columns_are_picked_by_name_cast_relabelled_and_realigned() {
        let core = Arc::new(Schema::new(vec![
            Field::new("partition", DataType::Int32, false),
            Field::new(
                "timestamp",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                false,
            ),
            Field::new("value", DataType::LargeBinary, true),
        ]));
        let batch = RecordBatch::try_new(
            core,
            vec![
                Arc::new(Int32Array::from(vec![1, 2, 3])),
                Arc::new(TimestampMicrosecondArray::from(vec![10, 20, 30]).with_timezone("UTC")),
                Arc::new(LargeBinaryArray::from(vec![Some(&b"a"[..]), None, Some(b"ccc")])),
            ],
        )
        .unwrap()
        .slice(1, 2); // array offsets Arrow Java can't express
        let conform = Conform::new(spark_schema());
        let out = conform.batch(&batch).unwrap();
        assert_eq!(out.schema(), spark_schema());
        let value = column(&out, "value");
        assert_eq!(
            value.as_any().downcast_ref::<BinaryArray>().unwrap(),
            &BinaryArray::from(vec![None, Some(&b"ccc"[..])])
        );
        for data in conform.columns(&batch).unwrap() {
            assert!(!needs_copy(&data), "{data:?}");
        }
        let stamps = column(&out, "timestamp");
        assert_eq!(stamps.to_data().buffers()[0].typed_data::<i64>(), &[20, 30]);
    }

    #[test]
    fn a_handed_batch_is_described_in_ipc_order_and_counted_until_released() {
        let batch = RecordBatch::try_new(
            spark_schema(),
            vec![
                Arc::new(BinaryArray::from(vec![Some(&b"ab"[..]), None])),
                Arc::new(TimestampMicrosecondArray::from(vec![1, 2]).with_timezone("Europe/Paris")),
            ],
        )
        .unwrap();
        let before = live_handles();
        let columns = Conform::new(spark_schema()).columns(&batch).unwrap();
        let d = Handed::hand_over(2, columns).unwrap();
        assert_eq!(live_handles(), before + 1);
        // rows, 2 nodes (len 2, 1 null; len 2, 0 nulls), 5 buffers
        assert_eq!(&d[1..7], &[2, 2, 2, 1, 2, 0]);
        assert_eq!(d[7], 5);
        let sizes: Vec<i64> = d[8..].chunks(2).map(|b| b[1]).collect();
        assert_eq!(sizes, vec![1, 12, 2, 0, 16]); // validity, offsets, data; no validity, values
        assert!(d[8..].chunks(2).all(|b| (b[0] as usize).is_multiple_of(ALIGN)));
        unsafe { Handed::release(d[0]) };
        assert_eq!(live_handles(), before);
    }

    #[test]
    fn a_missing_column_is_an_error_naming_it() {
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("value", DataType::Binary, true)])),
            vec![Arc::new(BinaryArray::from(vec![Some(&b"x"[..])]))],
        )
        .unwrap();
        let Err(Failure::Core(text)) = Conform::new(spark_schema()).columns(&batch) else {
            panic!("no error");
        };
        assert!(text.contains("\"timestamp\""), "{text}");
    }
}
