//! Remote files through `object_store` (S3 and S3-compatible servers, GCS,
//! Azure, plain HTTP), behind the [`Storage`] trait.
//!
//! Calls are synchronous: each blocks on one tokio runtime per process, made
//! on first use and made again in a forked child (Spark's Python workers fork
//! from a daemon; a runtime and the connections it drove don't survive a fork).
//! Stores are made by [`super::uri::resolve`], which reads credentials and
//! endpoints from the environment and from options.

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_buffer::Buffer;
use futures_util::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::uri::{split_uri, SplitUri};
use super::{Entry, Location, Storage, StorageError};

/// One runtime per process, keyed by its id.
static RUNTIME: Mutex<Option<(u32, Arc<tokio::runtime::Runtime>)>> = Mutex::new(None);

/// The runtime of this process, made on first use and again after a fork.
pub(crate) fn runtime() -> Result<Arc<tokio::runtime::Runtime>, std::io::Error> {
    static TLS: OnceLock<()> = OnceLock::new();
    TLS.get_or_init(|| {
        // reqwest is built without a TLS provider of its own (no aws-lc): ring's, once.
        // An error means an application installed its own already, which is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((owner, runtime)) = slot.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(runtime));
        }
    }
    if let Some((_, inherited)) = slot.take() {
        // A forked child: the parent's worker threads aren't here to be joined.
        std::mem::forget(inherited);
    }
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kafkabatch-io")
            .enable_all()
            .build()?,
    );
    *slot = Some((pid, Arc::clone(&runtime)));
    Ok(runtime)
}

/// Files in one bucket (container, host) of an object store.
///
/// Locations are URIs of that bucket as the user spells them
/// (`s3a://bucket/prefix/orders-0/00000000000000000000.log`, optionally with a
/// `?query` of options); listings give back URIs spelled as the prefix was.
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    /// The scheme as object_store knows it (`s3` for `s3a`/`s3n`), lower case.
    scheme: String,
    /// The bucket, container or host.
    authority: String,
}

impl std::fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ObjectStorage({}://{}, {})", self.scheme, self.authority, self.store)
    }
}

impl ObjectStorage {
    /// A storage over `store`, serving the URIs `scheme://authority/...`
    /// (`scheme` as [`super::uri::canonical_scheme`] spells it).
    pub fn new(store: Arc<dyn ObjectStore>, scheme: &str, authority: &str) -> Self {
        ObjectStorage {
            store,
            scheme: scheme.to_ascii_lowercase(),
            authority: authority.to_string(),
        }
    }

    /// The object path of `location`, checked to be in this storage's bucket.
    fn path_of<'a>(&self, location: &'a Location) -> Result<(SplitUri<'a>, Path), StorageError> {
        let other = |message: String| StorageError::Other {
            location: location.clone(),
            message,
        };
        let split = split_uri(location.as_str()).ok_or_else(|| other("not a URI".into()))?;
        if split.canonical_scheme() != self.scheme || split.authority != self.authority {
            return Err(other(format!(
                "not in {}://{}/ (the storage this was asked of)",
                self.scheme, self.authority
            )));
        }
        let key = split.key.trim_matches('/');
        let path = Path::from_url_path(key).map_err(|e| other(format!("not an object key: {e}")))?;
        Ok((split, path))
    }

    fn block_on<F: std::future::Future>(&self, location: &Location, future: F) -> Result<F::Output, StorageError> {
        let runtime = runtime().map_err(|e| StorageError::Other {
            location: location.clone(),
            message: format!("can't start the I/O runtime: {e}"),
        })?;
        Ok(runtime.block_on(future))
    }
}

/// A storage error for `location` from object_store's.
fn error_of(location: &Location, error: object_store::Error) -> StorageError {
    match error {
        object_store::Error::NotFound { .. } => StorageError::NotFound(location.clone()),
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            StorageError::PermissionDenied(location.clone())
        }
        other => StorageError::Other {
            location: location.clone(),
            message: other.to_string(),
        },
    }
}

impl Storage for ObjectStorage {
    fn list(&self, prefix: &Location, recursive: bool) -> Result<Vec<Entry>, StorageError> {
        let (split, path) = self.path_of(prefix)?;
        let head = format!("{}://{}/", split.scheme, split.authority);
        let suffix = split.query.map(|q| format!("?{q}")).unwrap_or_default();
        let at = (!path.as_ref().is_empty()).then_some(&path);
        let objects = self.block_on(prefix, async {
            if recursive {
                self.store.list(at).try_collect::<Vec<_>>().await
            } else {
                self.store.list_with_delimiter(at).await.map(|listed| listed.objects)
            }
        })?;
        let mut entries: Vec<Entry> = objects
            .map_err(|e| error_of(prefix, e))?
            .into_iter()
            .map(|meta| Entry {
                location: Location::new(format!("{head}{}{suffix}", meta.location)),
                size: meta.size,
            })
            .collect();
        entries.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(entries)
    }

    fn size(&self, location: &Location) -> Result<Option<u64>, StorageError> {
        let (_, path) = self.path_of(location)?;
        if path.as_ref().is_empty() {
            return Ok(None); // a bucket is no file
        }
        match self.block_on(location, self.store.head(&path))? {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(error_of(location, e)),
        }
    }

    fn read_range(&self, location: &Location, range: Range<u64>) -> Result<Buffer, StorageError> {
        Ok(self
            .read_ranges(location, std::slice::from_ref(&range))?
            .pop()
            .unwrap_or_else(Buffer::default))
    }

    /// One request per run of nearby ranges (object_store's `get_ranges` joins
    /// ranges less than 1 MiB apart).
    fn read_ranges(&self, location: &Location, ranges: &[Range<u64>]) -> Result<Vec<Buffer>, StorageError> {
        let (_, path) = self.path_of(location)?;
        let wanted: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
        if let Some(bad) = ranges.iter().find(|r| r.start > r.end) {
            return Err(StorageError::Other {
                location: location.clone(),
                message: format!("range {}..{} ends before it starts", bad.start, bad.end),
            });
        }
        let fetched = if wanted.is_empty() {
            Vec::new()
        } else {
            match self.block_on(location, self.store.get_ranges(&path, &wanted))? {
                Ok(fetched) => fetched,
                Err(object_store::Error::NotFound { .. }) => return Err(StorageError::NotFound(location.clone())),
                Err(e) => {
                    // A range past the end (416, or a short answer): say so with the object's size.
                    if let Ok(Some(size)) = self.size(location) {
                        if let Some(past) = wanted.iter().find(|r| r.end > size) {
                            return Err(out_of_range(location, past, size));
                        }
                    }
                    return Err(error_of(location, e));
                }
            }
        };
        let mut fetched = fetched.into_iter();
        let mut out = Vec::with_capacity(ranges.len());
        for range in ranges {
            if range.start == range.end {
                out.push(Buffer::default());
                continue;
            }
            let bytes = fetched.next().ok_or_else(|| StorageError::Other {
                location: location.clone(),
                message: "the store answered fewer ranges than were asked".into(),
            })?;
            if (bytes.len() as u64) < range.end - range.start {
                let size = range.start + bytes.len() as u64;
                return Err(out_of_range(location, range, size));
            }
            out.push(Buffer::from(bytes));
        }
        Ok(out)
    }
}

fn out_of_range(location: &Location, range: &Range<u64>, size: u64) -> StorageError {
    StorageError::OutOfRange {
        location: location.clone(),
        start: range.start,
        end: range.end,
        size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::PutPayload;

    fn storage_with(files: &[(&str, &[u8])]) -> ObjectStorage {
        let store = InMemory::new();
        let rt = runtime().unwrap();
        for (key, bytes) in files {
            rt.block_on(store.put(&Path::from(*key), PutPayload::from(bytes.to_vec())))
                .unwrap();
        }
        ObjectStorage::new(Arc::new(store), "s3", "bucket")
    }

    #[test]
    fn lists_with_sizes_in_the_prefix_spelling() {
        let s = storage_with(&[
            ("p/orders-0/00000000000000000000.log", b"abc"),
            ("p/orders-0/00000000000000000000.index", b""),
            ("p/orders-1/00000000000000000005.log", b"hello"),
            ("px/other.log", b"x"),
        ]);
        let got = s.list(&Location::new("s3a://bucket/p/?region=x"), true).unwrap();
        let names: Vec<(&str, u64)> = got.iter().map(|e| (e.location.as_str(), e.size)).collect();
        assert_eq!(
            names,
            vec![
                ("s3a://bucket/p/orders-0/00000000000000000000.index?region=x", 0),
                ("s3a://bucket/p/orders-0/00000000000000000000.log?region=x", 3),
                ("s3a://bucket/p/orders-1/00000000000000000005.log?region=x", 5),
            ]
        );
        assert!(s.list(&Location::new("s3://bucket/p"), false).unwrap().is_empty());
        assert_eq!(s.list(&Location::new("s3://bucket/"), false).unwrap().len(), 0);
        assert_eq!(s.list(&Location::new("s3://bucket"), true).unwrap().len(), 4);
    }

    #[test]
    fn sizes_and_ranges() {
        let s = storage_with(&[("a/b.log", b"0123456789")]);
        let at = Location::new("s3://bucket/a/b.log");
        assert_eq!(s.size(&at).unwrap(), Some(10));
        assert_eq!(s.size(&Location::new("s3://bucket/a/none.log")).unwrap(), None);
        assert_eq!(s.read_range(&at, 2..5).unwrap().as_slice(), b"234");
        assert_eq!(s.read_range(&at, 4..4).unwrap().as_slice(), b"");
        let parts = s.read_ranges(&at, &[0..1, 3..3, 8..10, 1..4]).unwrap();
        let parts: Vec<&[u8]> = parts.iter().map(|b| b.as_slice()).collect();
        assert_eq!(parts, vec![&b"0"[..], b"", b"89", b"123"]);
        match s.read_range(&at, 8..12) {
            Err(StorageError::OutOfRange {
                size: 10,
                start: 8,
                end: 12,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            s.read_range(&Location::new("s3://bucket/a/none.log"), 0..1),
            Err(StorageError::NotFound(_))
        ));
        assert!(matches!(
            s.read_range(&Location::new("s3://other/a/b.log"), 0..1),
            Err(StorageError::Other { .. })
        ));
    }
}
