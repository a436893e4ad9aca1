//! What a reader found, for Spark: the counts behind the source's custom
//! metrics (`Native.metrics`) and, under `mode=PERMISSIVE`, the lines it
//! logs for the splits that lost batches (`Native.takeLosses`).

use jni::objects::{JClass, JLongArray, JObjectArray, JString};
use jni::sys::jlong;
use jni::EnvUnowned;

use crate::{entry, locked, Reader};

/// The counts of `Native.metrics`, in this order (the Java side's `ReadMetrics` names them).
fn counts(reader: &Reader) -> [i64; 4] {
    let stats = reader.batches.stats();
    let long = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    [
        long(stats.bytes_read),
        long(stats.records as u64),
        long(stats.skipped.len() as u64),
        long(stats.crc_errors as u64),
    ]
}

/// The log lines of the splits read to their end since the last call that lost batches or bytes
/// (PERMISSIVE reads only; other modes log nothing), after the reader's warnings not logged yet.
fn losses(reader: &mut Reader) -> Vec<String> {
    let mut lines = std::mem::take(&mut reader.warnings);
    let finished = reader.batches.take_finished();
    if reader.permissive {
        lines.extend(
            finished
                .iter()
                .filter(|r| r.lost_any())
                .map(|r| format!("kafka-log PERMISSIVE: {}", r.describe())),
        );
    }
    lines
}

/// `long[] metrics(long reader)`: bytes read, records read, corrupt batches skipped, CRC errors, so far.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_metrics<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> JLongArray<'local> {
    entry(&mut env, |env| {
        let reader = locked(handle)?;
        let values = counts(&reader);
        drop(reader);
        let out = env.new_long_array(values.len())?;
        out.set_region(env, 0, &values)?;
        Ok(out)
    })
}

/// `String[] takeLosses(long reader)`: see [`losses`].
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_takeLosses<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> JObjectArray<'local, JString<'local>> {
    entry(&mut env, |env| {
        let mut reader = locked(handle)?;
        let lines = losses(&mut reader);
        drop(reader);
        let out = JObjectArray::<JString>::new(env, lines.len(), JString::null())?;
        for (i, line) in lines.iter().enumerate() {
            let text = JString::from_str(env, line)?;
            out.set_element(env, i, &text)?;
            env.delete_local_ref(text);
        }
        Ok(out)
    })
}
