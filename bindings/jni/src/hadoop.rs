//! Hadoop's `FileSystem` as the core's [`Storage`]: the storage of remote
//! roots read with the configuration Spark's file sources use (`spark.hadoop.*`
//! settings, credential providers, a read's `fs.*` options), through the Java
//! class `io.github.kafkabatch.spark.HadoopStorage`.
//!
//! Which storage a remote root uses is option `storage`: `auto` (the default)
//! takes Hadoop's `FileSystem` where Hadoop has one for the URI's scheme (as a
//! Parquet read of the same URI would), else the core's object stores;
//! `hadoop` and `native` force one. The planner does not know: only the
//! [`Resolver`] it is given differs.
//!
//! The Java object is made on a thread the JVM called into (the driver's
//! native calls; on executors, the reader's opening, which the reader factory
//! hands the broadcast configuration to); its methods are then called from
//! whichever thread reads, attached to the JVM for the call.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_buffer::{Buffer, MutableBuffer};
use jni::objects::{JLongArray, JObject, JObjectArray, JString};
use jni::refs::Global;
use jni::{jni_sig, jni_str, Env, JValue, JavaVM};

use kafkabatch::scan::naming::{is_remote, uri_scheme};
use kafkabatch::scan::options::{ScanOptions, StorageChoice};
use kafkabatch::scan::plan::object_store_resolver;
use kafkabatch::scan::Resolver;
use kafkabatch::storage::{Entry, Location, Storage, StorageError};

use crate::Failure;

/// The largest range read into one direct `ByteBuffer` (its capacity is an `int`).
const MAX_PIECE: u64 = 1 << 30;

/// Schemes Hadoop has a `FileSystem` for that can't list or size files
/// (`HttpFileSystem`): `auto` leaves them to the object stores.
const UNLISTABLE: &[&str] = &["http", "https"];

/// A Hadoop `FileSystem` storage: a global reference to a Java `HadoopStorage`.
pub(crate) struct HadoopStorage {
    files: Global<JObject<'static>>,
    vm: JavaVM,
    /// Per scheme: `None` when Hadoop serves it, else why not.
    schemes: Mutex<HashMap<String, Option<String>>>,
}

impl std::fmt::Debug for HadoopStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HadoopStorage")
    }
}

/// The storage error of a Java exception a call on `location` threw.
fn storage_error(location: &Location, error: jni::errors::Error) -> StorageError {
    match error {
        jni::errors::Error::CaughtJavaException { name, msg, .. } => {
            let text = if msg == "<NULL>" {
                name.clone()
            } else {
                format!("{name}: {msg}")
            };
            match name.as_str() {
                "java.io.FileNotFoundException" => StorageError::NotFound(location.clone()),
                "java.nio.file.AccessDeniedException" | "org.apache.hadoop.security.AccessControlException" => {
                    StorageError::PermissionDenied(location.clone())
                }
                _ => StorageError::Other {
                    location: location.clone(),
                    message: format!("Hadoop FileSystem: {text}"),
                },
            }
        }
        other => StorageError::Other {
            location: location.clone(),
            message: format!("calling Hadoop's FileSystem through JNI: {other}"),
        },
    }
}

impl HadoopStorage {
    /// The storage of the native call running on this thread (`HadoopStorage.here`: the reader's, in a
    /// task; the session's configuration with the read's `fs.*` options, on the driver).
    fn here(options: &ScanOptions) -> Result<HadoopStorage, Failure> {
        let vm = JavaVM::singleton()?;
        let files = vm.attach_current_thread(|env| -> jni::errors::Result<Global<JObject<'static>>> {
            let pairs = hadoop_pairs(env, options)?;
            let files = env
                .call_static_method(
                    jni_str!("io/github/kafkabatch/spark/HadoopStorage"),
                    jni_str!("here"),
                    jni_sig!("([Ljava/lang/String;)Lio/github/kafkabatch/spark/HadoopStorage;"),
                    &[JValue::Object(&pairs)],
                )?
                .l()?;
            env.new_global_ref(files)
        });
        let files = files.map_err(|e| {
            Failure::Core(match e {
                jni::errors::Error::CaughtJavaException { name, msg, .. } => {
                    format!("making the Hadoop configuration of a remote read: {name}: {msg}")
                }
                e => format!("making the Hadoop configuration of a remote read: {e}"),
            })
        })?;
        Ok(HadoopStorage {
            files,
            vm,
            schemes: Mutex::new(HashMap::new()),
        })
    }

    /// Runs `f` with this thread attached to the JVM, a Java exception becoming a storage error on `location`.
    fn call<T>(
        &self,
        location: &Location,
        f: impl FnOnce(&mut Env<'_>, &JObject<'static>) -> jni::errors::Result<T>,
    ) -> Result<T, StorageError> {
        self.vm
            .attach_current_thread(|env| f(env, self.files.as_obj()))
            .map_err(|e| storage_error(location, e))
    }

    /// `None` when Hadoop has a `FileSystem` for `scheme`, else why not.
    fn why_not(&self, location: &Location, scheme: &str) -> Result<Option<String>, StorageError> {
        let scheme = scheme.to_ascii_lowercase();
        if let Some(known) = self.schemes.lock().unwrap_or_else(|p| p.into_inner()).get(&scheme) {
            return Ok(known.clone());
        }
        let why = self.call(location, |env, files| {
            let text = env.new_string(&scheme)?;
            let why = env
                .call_method(
                    files,
                    jni_str!("whyNot"),
                    jni_sig!("(Ljava/lang/String;)Ljava/lang/String;"),
                    &[JValue::Object(&text)],
                )?
                .l()?;
            if why.is_null() {
                return Ok(None);
            }
            let why = env.cast_local::<JString>(why)?;
            Ok(Some(why.try_to_string(env)?))
        })?;
        self.schemes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(scheme, why.clone());
        Ok(why)
    }

    /// Reads `range` of `location` straight into `into` (spare capacity of at least its length).
    fn read_into(&self, location: &Location, range: Range<u64>, into: &mut MutableBuffer) -> Result<(), StorageError> {
        let len = usize::try_from(range.end - range.start).map_err(|_| StorageError::Other {
            location: location.clone(),
            message: format!(
                "range {}..{} is larger than this machine's memory",
                range.start, range.end
            ),
        })?;
        let start = into.len();
        // SAFETY: the spare capacity holds `len` bytes; Java's readFully fills all of them or throws,
        // and the length is set only after it returned.
        let ptr = unsafe { into.as_mut_ptr().add(start) };
        self.call(location, |env, files| {
            let path = env.new_string(location.as_str())?;
            // SAFETY: the buffer outlives the call, and Java keeps no reference to it after readFully.
            let buffer = unsafe { env.new_direct_byte_buffer(ptr, len)? };
            env.call_method(
                files,
                jni_str!("read"),
                jni_sig!("(Ljava/lang/String;JLjava/nio/ByteBuffer;)V"),
                &[
                    JValue::Object(&path),
                    JValue::Long(range.start as i64),
                    JValue::Object(&buffer),
                ],
            )?;
            Ok(())
        })?;
        // SAFETY: the bytes were written above.
        unsafe { into.set_len(start + len) };
        Ok(())
    }
}

impl Drop for HadoopStorage {
    /// Closes the streams the Java side kept open.
    fn drop(&mut self) {
        let _ = self.vm.attach_current_thread(|env| -> jni::errors::Result<()> {
            env.call_method(self.files.as_obj(), jni_str!("close"), jni_sig!("()V"), &[])?;
            Ok(())
        });
    }
}

impl Storage for HadoopStorage {
    fn list(&self, prefix: &Location, recursive: bool) -> Result<Vec<Entry>, StorageError> {
        let head = prefix.as_str().trim_end_matches('/');
        let mut entries = self.call(prefix, |env, files| {
            let text = env.new_string(prefix.as_str())?;
            let listed = env
                .call_method(
                    files,
                    jni_str!("list"),
                    jni_sig!("(Ljava/lang/String;Z)[Ljava/lang/Object;"),
                    &[JValue::Object(&text), JValue::Bool(recursive)],
                )?
                .l()?;
            let listed = env.cast_local::<JObjectArray<JObject>>(listed)?;
            let names = listed.get_element(env, 0)?;
            let names = env.cast_local::<JObjectArray<JString>>(names)?;
            let sizes = listed.get_element(env, 1)?;
            let sizes = env.cast_local::<JLongArray>(sizes)?;
            let count = names.len(env)?;
            let mut lengths = vec![0i64; count];
            sizes.get_region(env, 0, &mut lengths)?;
            let mut entries = Vec::with_capacity(count);
            for (i, size) in lengths.into_iter().enumerate() {
                let name = names.get_element(env, i)?;
                let relative = name.try_to_string(env)?;
                // one local reference per file would pile up until the listing returns
                env.delete_local_ref(name);
                entries.push(Entry {
                    location: Location::new(format!("{head}/{relative}")),
                    size: u64::try_from(size).unwrap_or(0),
                });
            }
            Ok(entries)
        })?;
        entries.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(entries)
    }

    fn size(&self, location: &Location) -> Result<Option<u64>, StorageError> {
        let size = self.call(location, |env, files| {
            let text = env.new_string(location.as_str())?;
            env.call_method(
                files,
                jni_str!("size"),
                jni_sig!("(Ljava/lang/String;)J"),
                &[JValue::Object(&text)],
            )?
            .j()
        })?;
        Ok(u64::try_from(size).ok())
    }

    fn read_range(&self, location: &Location, range: Range<u64>) -> Result<Buffer, StorageError> {
        if range.start > range.end {
            return Err(StorageError::Other {
                location: location.clone(),
                message: format!("range {}..{} ends before it starts", range.start, range.end),
            });
        }
        let len = usize::try_from(range.end - range.start).map_err(|_| StorageError::Other {
            location: location.clone(),
            message: format!(
                "range {}..{} is larger than this machine's memory",
                range.start, range.end
            ),
        })?;
        let mut out = MutableBuffer::with_capacity(len);
        let mut at = range.start;
        while at < range.end {
            let end = range.end.min(at + MAX_PIECE);
            if let Err(e) = self.read_into(location, at..end, &mut out) {
                return Err(match e {
                    // readFully past the end: say so with the file's size, as the other storages do
                    StorageError::Other { ref message, .. } if message.contains("java.io.EOFException") => {
                        match self.size(location) {
                            Ok(Some(size)) if size < range.end => StorageError::OutOfRange {
                                location: location.clone(),
                                start: range.start,
                                end: range.end,
                                size,
                            },
                            _ => e,
                        }
                    }
                    e => e,
                });
            }
            at = end;
        }
        Ok(out.into())
    }
}

/// The read's `fs.*` options as a Java `String[]` of name, value pairs.
pub(crate) fn hadoop_pairs<'local>(
    env: &mut Env<'local>,
    options: &ScanOptions,
) -> jni::errors::Result<JObjectArray<'local, JString<'local>>> {
    let pairs = JObjectArray::<JString>::new(env, options.hadoop_options.len() * 2, JString::null())?;
    for (i, (name, value)) in options.hadoop_options.iter().enumerate() {
        for (j, text) in [name, value].into_iter().enumerate() {
            let text = env.new_string(text)?;
            pairs.set_element(env, 2 * i + j, &text)?;
            env.delete_local_ref(text);
        }
    }
    Ok(pairs)
}

/// Whether a read with these options reads a remote root through Hadoop's `FileSystem` (possibly:
/// `auto` asks Hadoop per scheme when the root is read).
pub(crate) fn wants_hadoop(options: &ScanOptions) -> bool {
    match options.storage {
        StorageChoice::Native => false,
        StorageChoice::Hadoop => options.paths.iter().any(|p| is_remote(p)),
        StorageChoice::Auto => options.paths.iter().any(|p| hadoop_candidate(p)),
    }
}

/// A remote URI Hadoop may read: not one carrying a `?query` of the object stores' options.
fn hadoop_candidate(path: &str) -> bool {
    is_remote(path) && !path.contains('?')
}

/// The storage of remote roots of a read with these options (see the module notes).
pub(crate) fn resolver(options: &ScanOptions) -> Result<Resolver, Failure> {
    let native = object_store_resolver();
    if !wants_hadoop(options) {
        return Ok(native);
    }
    let hadoop = Arc::new(HadoopStorage::here(options)?);
    let forced = options.storage == StorageChoice::Hadoop;
    Ok(Arc::new(move |path: &str| {
        let location = Location::new(path);
        let scheme = uri_scheme(path).unwrap_or_default();
        if !forced && (!hadoop_candidate(path) || UNLISTABLE.contains(&scheme.to_ascii_lowercase().as_str())) {
            return native(path);
        }
        match hadoop.why_not(&location, scheme)? {
            None => Ok(Arc::clone(&hadoop) as Arc<dyn Storage>),
            Some(_) if !forced => native(path),
            Some(why) => Err(StorageError::Other {
                location,
                message: format!(
                    "kafka-log option 'storage' is hadoop, and Hadoop has no FileSystem for {scheme}:// ({why}); \
                     add the jar of one to the session (spark.jars), or use storage=native for the core's object stores"
                ),
            }),
        }
    }))
}
