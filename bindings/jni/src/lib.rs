//! The JNI side of the JVM Spark source: the native methods of
//! `io.github.kafkabatch.spark.Native`, over the core's [`Scan`].
//!
//! The driver checks the options at `load()` (`checkOptions`), decides which
//! of Spark's predicates the core takes (`pushPredicates`, module
//! `pushdown`), answers aggregates from batch headers (`headerAggregates`,
//! module `aggregate`) and plans (`planTasks`, module `tasks`: the core's
//! serialised [`Split`]s packed into Spark tasks); executors read
//! (`openReader` over a task's splits and the scan's spec — options, columns,
//! limit —, `next` for the next piece of an Arrow IPC stream of the columns
//! read, `close`). Every entry runs through `entry`:
//! panics are caught and errors become Java exceptions (see `Failure`);
//! nothing unwinds into the JVM.

use std::collections::BTreeMap;
use std::sync::Mutex;

use arrow_array::RecordBatch;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::ArrowError;
use jni::errors::ErrorPolicy;
use jni::objects::JLongArray;
use jni::objects::{JByteArray, JClass, JObjectArray, JString};
use jni::sys::{jboolean, jlong};
use jni::{jni_str, Env, EnvUnowned};

use kafkabatch::scan::listing::ListError;
use kafkabatch::scan::options::{Mode, ScanOptions};
use kafkabatch::scan::{Scan, ScanError, ScanReader, Split};
use kafkabatch::storage::StorageError;
use kafkabatch::vocabulary::{in_words, Words};

mod hadoop;
mod handoff;
mod internal;
mod metrics;
mod values;

use handoff::{schema_from_java, Conform, Handed};
use values::Values;

mod aggregate;
mod pushdown;
mod tasks;

mod stream;

/// Why a native call failed, as the Java exception it becomes.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A bad option: `IllegalArgumentException`, in the option's words.
    Options(String),
    /// A path with nothing there: `java.io.FileNotFoundException`.
    NotFound(String),
    /// Anything else the core reports (decode, tiered, storage): `KafkaBatchException`.
    Core(String),
    /// A JNI call failed; an exception may already be pending.
    Jni(jni::errors::Error),
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Failure::Jni(e)
    }
}

impl From<ScanError> for Failure {
    /// The core's texts in the Spark source's option names (`tieredKeys`, `valueFormat`…); a decode
    /// error, which names files and positions, as it is.
    fn from(e: ScanError) -> Self {
        let spark = |text: String| in_words(&text, Words::Spark);
        match e {
            ScanError::Options(text) => Failure::Options(spark(text)),
            ScanError::List(ListError::NotFound(text)) => Failure::NotFound(text),
            ScanError::List(ListError::Storage(StorageError::NotFound(loc)))
            | ScanError::Storage(StorageError::NotFound(loc)) => {
                Failure::NotFound(StorageError::NotFound(loc).to_string())
            }
            e @ ScanError::Decode { .. } => Failure::Core(e.to_string()),
            e => Failure::Core(spark(e.to_string())),
        }
    }
}

/// Throws the Java exception of a [`Failure`] (or of a panic) and returns the default value.
struct ThrowMapped;

fn throw(env: &mut Env<'_>, class: &jni::strings::JNIStr, text: &str) -> jni::errors::Result<()> {
    if env.exception_check() {
        return Ok(()); // a Java exception is already on its way
    }
    // throw_new reports the exception it raised as an error: it is meant to propagate.
    let _ = env.throw_new(class, jni::strings::JNIString::new(text));
    Ok(())
}

impl<T: Default> ErrorPolicy<T, Failure> for ThrowMapped {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        err: Failure,
    ) -> jni::errors::Result<T> {
        match err {
            Failure::Options(text) => throw(env, jni_str!("java/lang/IllegalArgumentException"), &text)?,
            Failure::NotFound(text) => throw(env, jni_str!("java/io/FileNotFoundException"), &text)?,
            Failure::Core(text) => throw(env, jni_str!("io/github/kafkabatch/spark/KafkaBatchException"), &text)?,
            Failure::Jni(e) => throw(
                env,
                jni_str!("io/github/kafkabatch/spark/KafkaBatchException"),
                &format!("JNI call failed: {e}"),
            )?,
        }
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        payload: Box<dyn std::any::Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        // The payload may own anything: leak it rather than risk a panic while dropping it.
        std::mem::forget(payload);
        throw(
            env,
            jni_str!("io/github/kafkabatch/spark/KafkaBatchException"),
            &format!("kafkabatch native code panicked (a bug, please report it): {text}"),
        )?;
        Ok(T::default())
    }
}

/// The one wrapper every native method goes through: runs `f` with panics
/// caught, and turns a failure into its Java exception.
pub(crate) fn entry<'local, T, F>(env: &mut EnvUnowned<'local>, f: F) -> T
where
    T: Default + 'local,
    F: FnOnce(&mut Env<'local>) -> Result<T, Failure>,
{
    env.with_env(f).resolve::<ThrowMapped>()
}

/// Spark's options (the JSON object of strings the Java side sends), parsed and
/// checked by the core as the Python source's are (same names, same errors);
/// the planning knobs (`minPartitions`, `maxBytesPerPartition`,
/// `maxRecordsPerBatch`, `threads`) change no row and are accepted.
pub(crate) fn options_of(json: &str) -> Result<ScanOptions, Failure> {
    let mut given: BTreeMap<String, String> = serde_json::from_str(json)
        .map_err(|e| Failure::Core(format!("options from the JVM are not a JSON object of strings: {e}")))?;
    // the driver's resolved value specs travel with the options (see `values`), read by the readers
    values::take_resolved(&mut given)?;
    ScanOptions::parse(given).map_err(|e| Failure::Options(in_words(&e.0, Words::Spark)))
}

/// The core's scan of a batch read with these options. Remote roots
/// (`s3a://`, `gs://`, `hdfs://`, ...) are read through Hadoop's `FileSystem`
/// or the core's object stores (option `storage`, module `hadoop`).
pub(crate) fn scan_of(options: &ScanOptions) -> Result<Scan, Failure> {
    let resolver = hadoop::resolver(options)?;
    options
        .scan()
        .map(|scan| scan.resolver(resolver))
        .map_err(|e| Failure::Options(in_words(&e.0, Words::Spark)))
}

/// `String[] hadoopOptions(String spec)`: the read's `fs.*` options as name, value pairs when it reads
/// a remote root through Hadoop's `FileSystem`, else null (the reader factory broadcasts a Hadoop
/// configuration only then).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_hadoopOptions<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    spec: JString<'local>,
) -> JObjectArray<'local, JString<'local>> {
    entry(&mut env, |env| {
        let options = pushdown::Spec::parse(&spec.try_to_string(env)?)?.options;
        if !hadoop::wants_hadoop(&options) {
            return Ok(JObjectArray::<JString>::null());
        }
        Ok(hadoop::hadoop_pairs(env, &options)?)
    })
}

/// `void checkOptions(String optionsJson)`: the options' errors, and the listing's, at `load()`.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_checkOptions<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    options: JString<'local>,
) {
    entry(&mut env, |env| {
        let options = options_of(&options.try_to_string(env)?)?;
        options.internal().map_err(|e| Failure::Options(e.0))?;
        if options.batch_error().is_some() {
            // a stream takes what a batch read refuses (startingOffsets latest): the batch scan refuses it when planned
            options.tiered_key_pairs().map_err(|e| Failure::Options(e.0))?;
            return Ok(());
        }
        // planned here, as the Python source lists at load(): a missing path or a
        // folder that is not a partition fails load(), naming it
        let plan = scan_of(&options)?.plan()?;
        options
            .check_named_partitions(plan.partitions.iter().map(|p| (p.topic.as_str(), p.partition)))
            .map_err(|e| Failure::Options(e.0))?;
        Ok(())
    })
}

/// `long splitBytes(byte[] split)`: the bytes of the segment a split covers (Spark's size estimate).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_splitBytes<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    split: JByteArray<'local>,
) -> jlong {
    entry(&mut env, |env| {
        let split = Split::from_bytes(&env.convert_byte_array(&split)?)?;
        Ok(jlong::try_from(split.end - split.start).unwrap_or(jlong::MAX))
    })
}

/// A reader handed to the JVM as a handle: the core's reader, its batches
/// conformed to Spark's read schema, and, for the IPC transport, the stream
/// writer they go through.
struct Reader {
    batches: ScanReader,
    conform: Conform,
    /// How `value` is parsed (typed values), if it is.
    values: Option<Values>,
    /// The columns `internalTopic` decodes, where the query selects them.
    decoding: Option<internal::Decoding>,
    /// `mode=PERMISSIVE`: the splits that lost batches are logged (see `metrics::losses`).
    permissive: bool,
    /// Warnings not yet logged (a micro-batch's segment deleted before it was read, see `metrics::losses`).
    warnings: Vec<String>,
    /// The IPC transport's writer; `None` for the zero-copy hand-off, and once the stream's end was written.
    writer: Option<StreamWriter<Vec<u8>>>,
}

impl Reader {
    /// The next bytes of the IPC stream (the schema comes with the first
    /// batch), `None` after the end-of-stream marker.
    fn next(&mut self) -> Result<Option<Vec<u8>>, Failure> {
        let Some(writer) = self.writer.as_mut() else {
            return Ok(None);
        };
        let ipc = |e: ArrowError| Failure::Core(format!("writing Arrow IPC: {e}"));
        match self.batches.next() {
            Some(batch) => {
                let batch = typed(&self.values, &self.decoding, batch?)?;
                let batch: RecordBatch = self.conform.batch(&batch)?;
                writer.write(&batch).map_err(ipc)?;
            }
            None => {
                writer.finish().map_err(ipc)?;
                let bytes = std::mem::take(writer.get_mut());
                self.writer = None;
                return Ok(Some(bytes));
            }
        }
        Ok(Some(std::mem::take(writer.get_mut())))
    }

    /// The next batch handed over in place (see [`Handed::hand_over`]), `None` at the end.
    fn next_handed(&mut self) -> Result<Option<Vec<i64>>, Failure> {
        match self.batches.next() {
            Some(batch) => {
                let batch = typed(&self.values, &self.decoding, batch?)?;
                let columns = self.conform.columns(&batch)?;
                Ok(Some(Handed::hand_over(batch.num_rows(), columns)?))
            }
            None => Ok(None),
        }
    }
}

/// `batch` with its values parsed where the options type them, and the decoded columns of `internalTopic`.
fn typed(
    values: &Option<Values>,
    decoding: &Option<internal::Decoding>,
    batch: RecordBatch,
) -> Result<RecordBatch, Failure> {
    let batch = match values {
        Some(values) => values.parse(batch)?,
        None => batch,
    };
    match decoding {
        Some(decoding) => decoding.apply(&batch),
        None => Ok(batch),
    }
}

/// Java's `byte[][]` of serialised splits (from `planTasks` and its kin) as the core's `Split`s.
pub(crate) fn splits_of(env: &mut Env<'_>, splits: &JObjectArray<'_, JByteArray<'_>>) -> Result<Vec<Split>, Failure> {
    let mut parsed = Vec::new();
    for i in 0..splits.len(env)? {
        let bytes = splits.get_element(env, i)?;
        let split = env.convert_byte_array(&bytes)?;
        // one local reference per split would pile up until the call returns
        env.delete_local_ref(bytes);
        parsed.push(Split::from_bytes(&split)?);
    }
    Ok(parsed)
}

/// `long openReader(byte[][] splits, String spec, byte[] arrowSchema, boolean ipc)`: a reader of the
/// splits of one input partition (`spec`: the scan's options, columns and limit, see `pushdown`), whose
/// batches have exactly `arrowSchema`'s columns (Spark's read schema in Arrow, as IPC schema message
/// bytes); `ipc` picks the transport (`next`, else `nextBatch`).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_openReader<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    splits: JObjectArray<'local, JByteArray<'local>>,
    options: JString<'local>,
    arrow_schema: JByteArray<'local>,
    ipc: jboolean,
) -> jlong {
    entry(&mut env, |env| {
        let options_json = options.try_to_string(env)?;
        let mut spec = pushdown::Spec::parse(&options_json)?;
        let permissive = spec.options.mode == Mode::Permissive;
        let target = schema_from_java(&env.convert_byte_array(&arrow_schema)?)?;
        let parsed = splits_of(env, &splits)?;
        // the driver's specs; else (a schema given by the user) resolved here for the topics read
        let mut topics: Vec<String> = parsed.iter().map(|s| s.topic.clone()).collect();
        topics.dedup();
        let resolved = values::all_resolved_in_spec(&options_json)?;
        // the driver's internalTopic; else (a schema given by the user) resolved here
        let internal = match &resolved {
            Some(resolved) => resolved.internal.clone(),
            None => spec.options.internal().map_err(|e| Failure::Options(e.0))?,
        };
        let decoding = internal::Decoding::new(internal, &target)?;
        if decoding.is_some() {
            spec.also_read(&internal::Decoding::NEEDS)?;
        }
        let specs = values::specs_of(
            &spec.options,
            resolved.map(|r| r.values),
            &topics,
            &mut values::no_sample,
        )?;
        let raising = values::raising(&specs);
        if !raising.is_empty() {
            // a bad value fails the read even where the query selects other columns (the Python source's rule)
            spec.also_read(&[&raising[..], &["topic", "partition", "offset"]].concat())?;
        }
        if specs
            .iter()
            .any(|s| s.confluent() && (!s.null_on_error || target.field_with_name(&s.column).is_ok()))
        {
            // a value parsed from Confluent frames may carry its schema id in the headers
            spec.also_read(&["headers"])?;
        }
        let context = spec.scan()?.context()?;
        let values = Values::new(&specs, &target)?;
        let conform = Conform::new(target);
        let (parsed, warnings) = if stream::is_stream_spec(&options_json) {
            stream::still_there(parsed, &context, &spec.options)?
        } else {
            (parsed, Vec::new())
        };
        let batches = ScanReader::new(parsed, context);
        let writer = if ipc {
            Some(
                StreamWriter::try_new(Vec::new(), conform.schema())
                    .map_err(|e| Failure::Core(format!("writing Arrow IPC: {e}")))?,
            )
        } else {
            None
        };
        let reader = Box::new(Mutex::new(Reader {
            batches,
            conform,
            values,
            decoding,
            permissive,
            warnings,
            writer,
        }));
        handoff::handle_opened();
        Ok(Box::into_raw(reader) as jlong)
    })
}

/// The reader behind a handle from `openReader` (not yet closed).
fn reader_of<'a>(handle: jlong) -> Result<&'a Mutex<Reader>, Failure> {
    if handle == 0 {
        return Err(Failure::Core("a reader handle of 0 (closed, or never opened)".into()));
    }
    // SAFETY: the Java side passes only handles from openReader and forgets them at close.
    Ok(unsafe { &*(handle as *const Mutex<Reader>) })
}

/// `byte[] next(long reader)`: the next bytes of the reader's Arrow IPC stream, or null at its end.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_next<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> JByteArray<'local> {
    entry(&mut env, |env| match locked(handle)?.next()? {
        Some(bytes) => Ok(env.byte_array_from_slice(&bytes)?),
        None => Ok(JByteArray::null()),
    })
}

/// `void close(long reader)`: frees the reader (the handle is invalid afterwards).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_close<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    entry(&mut env, |_env| {
        if handle != 0 {
            // SAFETY: a handle from openReader, closed once (the Java side zeroes it).
            drop(unsafe { Box::from_raw(handle as *mut Mutex<Reader>) });
            handoff::handle_closed();
        }
        Ok(())
    })
}

/// The reader behind `handle`, locked.
fn locked<'a>(handle: jlong) -> Result<std::sync::MutexGuard<'a, Reader>, Failure> {
    reader_of(handle)?
        .lock()
        .map_err(|_| Failure::Core("this reader failed earlier in another thread".into()))
}

/// `long[] nextBatch(long reader)`: the next batch handed over in place, or null at the end:
/// `[handle, rows, node count, (length, null count)…, buffer count, (address, size)…]`; the buffers
/// live until `release(handle)`.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_nextBatch<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> JLongArray<'local> {
    entry(&mut env, |env| {
        let Some(description) = locked(handle)?.next_handed()? else {
            return Ok(JLongArray::null());
        };
        let out = env.new_long_array(description.len())?;
        if let Err(e) = out.set_region(env, 0, &description) {
            // SAFETY: the handle was just made and never reached Java.
            unsafe { Handed::release(description[0]) };
            return Err(e.into());
        }
        Ok(out)
    })
}

/// `void release(long batch)`: drops a batch from `nextBatch` (Java has let go of every buffer).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_release<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    batch: jlong,
) {
    entry(&mut env, |_env| {
        // SAFETY: Java releases each handle from nextBatch once (its buffers' shared count reached zero).
        unsafe { Handed::release(batch) };
        Ok(())
    })
}

/// `long liveHandles()`: readers and handed batches the JVM has not given back (for leak tests).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_liveHandles<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> jlong {
    entry(&mut env, |_env| Ok(handoff::live_handles()))
}
