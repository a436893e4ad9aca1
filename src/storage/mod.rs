//! Where segment bytes live: one small synchronous trait over local files,
//! object stores and storage a front end brings (a `pyarrow.fs.FileSystem`,
//! Hadoop's `FileSystem` on a JVM).
//!
//! The planner and readers see only `Arc<dyn Storage>`; each implementation
//! answers four questions: which files lie under a prefix (with sizes), how
//! big one file is, the bytes of a range of it, and (local files only) the
//! whole file memory-mapped.
//!
//! ```
//! use kafkabatch::storage::{Location, Storage, StorageError};
//! use std::ops::Range;
//!
//! /// A storage holding one in-memory file, as a test would build it.
//! #[derive(Debug)]
//! struct One(Vec<u8>);
//!
//! impl Storage for One {
//!     fn list(&self, _: &Location, _: bool) -> Result<Vec<kafkabatch::storage::Entry>, StorageError> {
//!         Ok(vec![kafkabatch::storage::Entry { location: Location::new("mem://x/0.log"), size: self.0.len() as u64 }])
//!     }
//!     fn size(&self, _: &Location) -> Result<Option<u64>, StorageError> { Ok(Some(self.0.len() as u64)) }
//!     fn read_range(&self, _: &Location, r: Range<u64>) -> Result<arrow_buffer::Buffer, StorageError> {
//!         Ok(arrow_buffer::Buffer::from(&self.0[r.start as usize..r.end as usize]))
//!     }
//! }
//!
//! let one = One(b"kafka".to_vec());
//! let bytes = one.read_range(&Location::new("mem://x/0.log"), 1..3).unwrap();
//! assert_eq!(bytes.as_slice(), b"af");
//! ```

pub mod glob;
pub mod local;

use std::fmt;
use std::ops::Range;

#[cfg(feature = "remote")]
pub mod object;
#[cfg(feature = "remote")]
pub mod uri;

use arrow_buffer::Buffer;

pub use local::LocalStorage;

/// A file's address as its front end spells it: a local path (`/data/orders-0/0.log`)
/// or a URI (`s3://bucket/prefix/orders-0/0.log`), kept as text so errors and
/// reports name files exactly as the user gave them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location(String);

impl Location {
    /// A location from its text.
    pub fn new(text: impl Into<String>) -> Self {
        Location(text.into())
    }

    /// The text the user (or a listing) gave.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last `/`-separated name (`00000000000000000000.log`).
    pub fn name(&self) -> &str {
        let text = self.0.trim_end_matches('/');
        text.rsplit('/').next().unwrap_or(text)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One file a listing found, with its size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub location: Location,
    pub size: u64,
}

/// Why a storage call failed, in words that name the file.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Nothing at the location (a missing local file, a 404).
    #[error("no such file or folder: {0}")]
    NotFound(Location),
    /// The location exists but may not be read (EACCES, 403).
    #[error("permission denied: {0}")]
    PermissionDenied(Location),
    /// A range past the end of the file: the file is shorter than a listing or an index said.
    #[error("{location}: range {start}..{end} is past the end of the file ({size} bytes)")]
    OutOfRange {
        location: Location,
        start: u64,
        end: u64,
        size: u64,
    },
    /// Anything else the storage reported (network, credentials, a front end's exception).
    #[error("{location}: {message}")]
    Other { location: Location, message: String },
}

/// Files by location: list with sizes, sizes, ranged reads, maps.
///
/// Calls are synchronous: callbacks into Python and the JVM are, and an object
/// store's implementation blocks on its own runtime.
pub trait Storage: Send + Sync + fmt::Debug {
    /// The files under `prefix` (a folder or a key prefix) with their sizes;
    /// `recursive` descends into subfolders. Folders themselves are not entries.
    fn list(&self, prefix: &Location, recursive: bool) -> Result<Vec<Entry>, StorageError>;

    /// The size of one file, `None` when nothing is there (a manifest's missing sibling).
    fn size(&self, location: &Location) -> Result<Option<u64>, StorageError>;

    /// The bytes of `range` of one file. A range past the end is [`StorageError::OutOfRange`].
    fn read_range(&self, location: &Location, range: Range<u64>) -> Result<Buffer, StorageError>;

    /// Several ranges of one file; stores that can fetch them together override this.
    fn read_ranges(&self, location: &Location, ranges: &[Range<u64>]) -> Result<Vec<Buffer>, StorageError> {
        ranges
            .iter()
            .map(|range| self.read_range(location, range.clone()))
            .collect()
    }

    /// The whole file memory-mapped, where the storage can (local files); `None` otherwise.
    fn map(&self, _location: &Location) -> Result<Option<Buffer>, StorageError> {
        Ok(None)
    }

    /// Whether locations are paths of this machine's file system, listed by
    /// walking and globbing folders. A storage a front end brings (a
    /// `pyarrow.fs.FileSystem`) answers `false`: its paths are its own, with
    /// or without a scheme (`bucket/prefix/orders-0`).
    fn is_local(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_name_is_the_last_part() {
        assert_eq!(Location::new("s3://b/p/orders-0/00.log").name(), "00.log");
        assert_eq!(Location::new("/data/orders-0/").name(), "orders-0");
        assert_eq!(Location::new("0.log").name(), "0.log");
    }
}
