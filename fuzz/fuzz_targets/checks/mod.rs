//! The fuzz targets' checks, shared with the regression test that replays
//! `fuzz/regressions/**` in the main crate (`src/fuzz_regressions.rs`
//! includes this module by path, with `kafkabatch` naming the crate itself).
//! Every target includes this module; not every target uses every helper.
#![allow(dead_code)]

pub mod decode;
pub mod iter_headers;
pub mod json_values;
pub mod kmsg;
pub mod tiered;
pub mod values;

use arrow_array::{
    Array, BinaryArray, BinaryViewArray, Int32Array, Int64Array, ListArray, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray,
};
use kafkabatch::compression::{self, Codec, CodecError, CompressOptions};
use kafkabatch::{DecodeError, Decoded};

/// Cap on decompressed output in the fuzz targets: small, so an input that
/// inflates stays fast, and the bound is checked on every run.
pub const LIMIT: usize = 1 << 20;

/// One output row, every column but topic and partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub offset: i64,
    pub timestamp_us: i64,
    pub timestamp_type: i32,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

fn col<T: 'static>(batch: &RecordBatch, i: usize) -> &T {
    batch
        .column(i)
        .as_any()
        .downcast_ref::<T>()
        .expect("column type per the schema")
}

fn binary(a: &BinaryArray, i: usize) -> Option<Vec<u8>> {
    a.is_valid(i).then(|| a.value(i).to_vec())
}

/// Column `i`'s bytes of every row: `binary`, or `binary_view` (the output
/// of `decode_range_views`).
fn bytes_column(batch: &RecordBatch, i: usize) -> Vec<Option<Vec<u8>>> {
    let column = batch.column(i).as_any();
    match column.downcast_ref::<BinaryArray>() {
        Some(a) => (0..a.len()).map(|j| binary(a, j)).collect(),
        None => {
            let a = column.downcast_ref::<BinaryViewArray>().expect("binary or binary_view");
            (0..a.len())
                .map(|j| a.is_valid(j).then(|| a.value(j).to_vec()))
                .collect()
        }
    }
}

/// The rows of a decode result, in order.
pub fn rows(decoded: &Decoded) -> Vec<Row> {
    let mut out = Vec::new();
    for batch in &decoded.chunks {
        let key = bytes_column(batch, 0);
        let value = bytes_column(batch, 1);
        let offset = col::<Int64Array>(batch, 4);
        let ts = col::<TimestampMicrosecondArray>(batch, 5);
        let ts_type = col::<Int32Array>(batch, 6);
        let headers = col::<ListArray>(batch, 7);
        for i in 0..batch.num_rows() {
            let list = headers.value(i);
            let list = list.as_any().downcast_ref::<StructArray>().expect("header struct");
            let hk = list
                .column(0)
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("header key");
            let hv = list
                .column(1)
                .as_any()
                .downcast_ref::<BinaryArray>()
                .expect("header value");
            let hs = (0..list.len())
                .map(|j| (hk.value(j).to_owned(), binary(hv, j)))
                .collect();
            out.push(Row {
                key: key[i].clone(),
                value: value[i].clone(),
                offset: offset.value(i),
                timestamp_us: ts.value(i),
                timestamp_type: ts_type.value(i),
                headers: hs,
            });
        }
    }
    assert_eq!(out.len(), decoded.records, "records count matches the rows");
    out
}

/// An error must name its batch: the position is where the batch starts and
/// the message says so.
pub fn check_located(e: &DecodeError, batch_position: usize) {
    assert_eq!(e.batch_position, batch_position, "error names the wrong batch: {e}");
    let text = e.to_string();
    assert!(
        text.contains(&format!("at byte {batch_position}")),
        "message does not give the batch position: {text}"
    );
    if !e.in_payload {
        assert!(
            e.byte_position >= batch_position,
            "field position before its batch: {e}"
        );
    }
}

/// Whether `small` is `big` with some items removed (order kept).
pub fn is_subsequence<T: PartialEq>(small: &[T], big: &[T]) -> bool {
    let mut it = big.iter();
    small.iter().all(|x| it.any(|y| y == x))
}

/// Decompress `payload` with `codec` (as a batch of `magic` would) and check
/// the cap, determinism, and that what comes out compresses and comes back.
pub fn check_decompress(codec: Codec, payload: &[u8], magic: i8) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let result = compression::decompress(codec, payload, magic, LIMIT, &mut out);
    assert!(
        out.len() <= LIMIT,
        "{} output of {} bytes passes the {LIMIT}-byte cap",
        codec.name(),
        out.len()
    );
    // The buffer is never grown past the cap (one byte of slack: zstd's
    // streaming path detects "too large" by reaching limit + 1).
    assert!(
        out.capacity() <= LIMIT + 1,
        "{} buffer grew to {} bytes, past the cap",
        codec.name(),
        out.capacity()
    );
    // A dirty output buffer gives the same answer (it is cleared first).
    let mut again = vec![0xAAu8; 100];
    let second = compression::decompress(codec, payload, magic, LIMIT, &mut again);
    match (&result, &second) {
        // The codec's own message may differ between calls (zstd's per-thread
        // context keeps buffers sized by earlier frames); the outcome may not.
        (Err(CodecError::Invalid { .. }), Err(CodecError::Invalid { .. })) => {}
        _ => assert_eq!(result, second, "same input, different outcome"),
    }
    // The decode's way: into a buffer an earlier batch left its bytes in,
    // kept as room (`decompress_reusing`): the same outcome and bytes.
    let mut reused = vec![0x5Au8; 70_000];
    let third = compression::decompress_reusing(codec, payload, magic, LIMIT, &mut reused);
    assert!(
        reused.len() <= LIMIT.max(70_000),
        "{} reused buffer grew past the cap",
        codec.name()
    );
    match (&result, &third) {
        (Ok(()), Ok(n)) => assert!(
            reused[..*n] == out[..],
            "{} reused buffer, different output",
            codec.name()
        ),
        (Err(CodecError::Invalid { .. }), Err(CodecError::Invalid { .. })) => {}
        (Err(a), Err(b)) => assert_eq!(a, b, "reused buffer, different error"),
        _ => panic!(
            "{} reused buffer, different outcome: {result:?} / {third:?}",
            codec.name()
        ),
    }
    match result {
        Ok(()) => {
            assert_eq!(out, again, "same input, different output");
            let mut packed = Vec::new();
            compression::compress(codec, &out, magic, CompressOptions::default(), &mut packed)
                .expect("compress what was decompressed");
            let mut back = Vec::new();
            compression::decompress(codec, &packed, magic, LIMIT, &mut back).expect("decompress our own output");
            assert!(back == out, "{} round trip changed {} bytes", codec.name(), out.len());
            Some(out)
        }
        Err(CodecError::TooLarge { limit, .. }) => {
            assert_eq!(limit, LIMIT);
            None
        }
        Err(CodecError::Invalid { .. }) => None,
    }
}
