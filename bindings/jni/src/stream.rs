//! The stream calls of `io.github.kafkabatch.spark.Native` behind the JVM
//! source's `MicroBatchStream` (`KafkaLogStream`): the core's stream state
//! ([`StreamState`]) held by a handle on the driver, offsets as Spark's Kafka
//! source writes them (JSON text), micro-batches as the core's serialised
//! [`Split`]s, read by the same readers as a batch read's.

use std::sync::Mutex;

use jni::objects::{JByteArray, JClass, JObjectArray, JString};
use jni::sys::{jint, jlong};
use jni::EnvUnowned;

use kafkabatch::scan::options::ScanOptions;
use kafkabatch::scan::read::ReadContext;
use kafkabatch::scan::stream::{
    deleted_before_read, offsets_from_json, offsets_to_json, stream_option_error, Offsets, StreamError, StreamState,
};
use kafkabatch::scan::tasks::{split_work, tasks_of};
use kafkabatch::scan::Split;
use kafkabatch::storage::{Location, StorageError};

use crate::pushdown::Spec;
use crate::{entry, Failure};

impl From<StreamError> for Failure {
    fn from(e: StreamError) -> Self {
        match e {
            StreamError::Offsets(text) => Failure::Options(text),
            StreamError::Scan(e) => e.into(),
            StreamError::DataLoss(text) | StreamError::Corrupt(text) => Failure::Core(text),
        }
    }
}

/// Whether a reader's spec is a micro-batch's (`KafkaLogStream` marks it `"stream": true`).
pub(crate) fn is_stream_spec(spec: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(spec)
        .ok()
        .and_then(|v| v.get("stream").and_then(serde_json::Value::as_bool))
        .unwrap_or(false)
}

/// A micro-batch's splits whose segments are still there: one deleted (retention) since the
/// micro-batch was planned fails the read (`failOnDataLoss=true`) or is left out with a warning,
/// returned (`false`), as the Python source's readers do.
pub(crate) fn still_there(
    splits: Vec<Split>,
    context: &ReadContext,
    options: &ScanOptions,
) -> Result<(Vec<Split>, Vec<String>), Failure> {
    let mut kept = Vec::with_capacity(splits.len());
    let mut warnings = Vec::new();
    for split in splits {
        let gone = match context.storage_for(&split.path)?.size(&Location::new(&split.path)) {
            Ok(Some(_)) => None,
            Ok(None) => Some("no such file".to_string()),
            Err(e @ StorageError::NotFound(_)) => Some(e.to_string()),
            Err(e) => return Err(kafkabatch::scan::ScanError::Storage(e).into()),
        };
        match gone {
            None => kept.push(split),
            Some(why) if options.fail_on_data_loss => {
                return Err(Failure::Core(deleted_before_read(&split.path, &why, true)))
            }
            Some(why) => warnings.push(deleted_before_read(&split.path, &why, false)),
        }
    }
    Ok((kept, warnings))
}

/// What a stream handle holds: the options and the core's state.
struct Stream {
    options: ScanOptions,
    state: StreamState,
}

impl Stream {
    /// List the folders again and walk what was added from `wanted`.
    fn refresh(&mut self, wanted: &Offsets) -> Result<(), Failure> {
        let listed = match self.state.list(&self.options) {
            Ok(listed) => listed,
            // the folders went away: nothing new (and nothing to fail on until read)
            Err(StreamError::Scan(kafkabatch::scan::ScanError::List(
                kafkabatch::scan::listing::ListError::NotFound(_),
            ))) if self.state.has_logs() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        for skipped in self.state.refresh(listed, wanted)? {
            eprintln!("{skipped}");
        }
        Ok(())
    }

    /// The data losses `failOnDataLoss=false` let through, on the driver's stderr.
    fn warn(&mut self) {
        for text in self.state.take_warnings() {
            eprintln!("WARN {text}");
        }
    }
}

fn stream_of<'a>(handle: jlong) -> Result<std::sync::MutexGuard<'a, Stream>, Failure> {
    if handle == 0 {
        return Err(Failure::Core("a stream handle of 0 (stopped, or never opened)".into()));
    }
    // SAFETY: the Java side passes only handles from streamOpen and forgets them at streamClose.
    let stream = unsafe { &*(handle as *const Mutex<Stream>) };
    stream
        .lock()
        .map_err(|_| Failure::Core("this stream failed earlier in another thread".into()))
}

fn offsets(text: &str) -> Result<Offsets, Failure> {
    Ok(offsets_from_json(text)?)
}

/// `long streamOpen(String spec)`: the driver's state of a stream of the read `spec` (see `pushdown`).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamOpen<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    spec: JString<'local>,
) -> jlong {
    entry(&mut env, |env| {
        let options = Spec::parse(&spec.try_to_string(env)?)?.options;
        if let Some(text) = stream_option_error(&options) {
            return Err(Failure::Options(text));
        }
        // remote roots through Hadoop's FileSystem or the object stores, as a batch read's (option `storage`)
        let state = StreamState::of_options(&options, Some(crate::hadoop::resolver(&options)?))?;
        let stream = Box::new(Mutex::new(Stream { options, state }));
        Ok(Box::into_raw(stream) as jlong)
    })
}

/// `long streamMaxOffsets(long stream)`: `maxOffsetsPerTrigger`, -1 when not given.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamMaxOffsets<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> jlong {
    entry(&mut env, |_env| {
        Ok(stream_of(handle)?.options.max_offsets_per_trigger.unwrap_or(-1))
    })
}

/// `long streamMaxBytes(long stream)`: `maxBytesPerTrigger` in bytes, -1 when not given.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamMaxBytes<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> jlong {
    entry(&mut env, |_env| {
        let bytes = stream_of(handle)?.options.max_bytes_per_trigger;
        Ok(bytes.map_or(-1, |b| jlong::try_from(b).unwrap_or(jlong::MAX)))
    })
}

/// `String streamInitialOffset(long stream)`: the first offsets (`startingOffsets`).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamInitialOffset<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> JString<'local> {
    entry(&mut env, |env| {
        let mut stream = stream_of(handle)?;
        stream.refresh(&Offsets::new())?;
        let found = stream
            .state
            .initial_offsets(&stream.options.starting_spec, &stream.options.paths)?;
        Ok(JString::from_str(env, offsets_to_json(&found))?)
    })
}

/// `String streamLatestOffset(long stream, String start, long maxRows, long maxBytes)`:
/// the end of the next micro-batch from `start` (a limit below 0: none).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamLatestOffset<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    start: JString<'local>,
    max_rows: jlong,
    max_bytes: jlong,
) -> JString<'local> {
    entry(&mut env, |env| {
        let begin = offsets(&start.try_to_string(env)?)?;
        let mut stream = stream_of(handle)?;
        stream.refresh(&begin)?;
        let found = stream.state.latest_offset(
            &begin,
            (max_rows >= 0).then_some(max_rows),
            u64::try_from(max_bytes).ok(),
        );
        stream.warn();
        Ok(JString::from_str(env, offsets_to_json(&found?))?)
    })
}

/// `String streamReportLatest(long stream)`: the offsets available at the last look, or null.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamReportLatest<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> JString<'local> {
    entry(&mut env, |env| {
        let stream = stream_of(handle)?;
        let latest = stream.state.latest();
        if latest.is_empty() {
            return Ok(JString::null());
        }
        Ok(JString::from_str(env, offsets_to_json(latest))?)
    })
}

/// `void streamPrepareAvailableNow(long stream)`: `Trigger.AvailableNow` stops at what is there now.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamPrepareAvailableNow<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    entry(&mut env, |_env| {
        let mut stream = stream_of(handle)?;
        stream.refresh(&Offsets::new())?;
        stream.state.prepare_available_now();
        Ok(())
    })
}

/// `byte[][][] streamPlanTasks(long stream, String start, String end, int defaultMinPartitions)`: the
/// splits of a micro-batch packed into tasks as a batch read's are (`maxBytesPerPartition`,
/// `minPartitions`, else `defaultMinPartitions`).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamPlanTasks<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    start: JString<'local>,
    end: JString<'local>,
    default_min_partitions: jint,
) -> JObjectArray<'local, JObjectArray<'local, JByteArray<'local>>> {
    entry(&mut env, |env| {
        let begin = offsets(&start.try_to_string(env)?)?;
        let until = offsets(&end.try_to_string(env)?)?;
        let mut stream = stream_of(handle)?;
        let (wanted, again) = stream.state.wanted_for(&begin, &until);
        if again {
            // a restart replaying the micro-batch in the checkpoint's offset log
            stream.refresh(&wanted)?;
        }
        let planned = stream.state.micro_batch(&begin, &until);
        stream.warn();
        // warnings of untrusted indexes are the batch read's; a micro-batch reads such a segment whole
        let tasks = tasks_of(
            &planned?,
            &stream.options,
            i64::from(default_min_partitions),
            split_work,
            stream.state.context(),
        );
        drop(stream);
        let tasks = crate::tasks::serialised(&tasks);
        crate::tasks::java_tasks(env, &tasks)
    })
}

/// `void streamCommit(long stream, String end)`: a micro-batch up to `end` committed.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamCommit<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    end: JString<'local>,
) {
    entry(&mut env, |env| {
        let end = offsets(&end.try_to_string(env)?)?;
        stream_of(handle)?.state.commit(&end);
        Ok(())
    })
}

/// `void streamClose(long stream)`: frees the stream's state (the handle is invalid afterwards).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_streamClose<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    entry(&mut env, |_env| {
        if handle != 0 {
            // SAFETY: a handle from streamOpen, closed once (the Java side zeroes it).
            drop(unsafe { Box::from_raw(handle as *mut Mutex<Stream>) });
        }
        Ok(())
    })
}
