//! Local files: listing by a walk that follows symbolic links but never loops,
//! sizes and ranged reads through `std::fs`, whole files memory-mapped into an
//! Arrow [`Buffer`] that owns the map (views into it keep it alive).
//!
//! ```no_run
//! use kafkabatch::storage::{local::LocalStorage, Location, Storage};
//! let files = LocalStorage.list(&Location::new("/var/lib/kafka/data"), true).unwrap();
//! let first = LocalStorage.map(&files[0].location).unwrap();
//! ```

use std::collections::HashSet;
use std::fs;
use std::io;
use std::ops::Range;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;

use super::glob::{entry_is_dir, join};
use super::{Entry, Location, Storage, StorageError};

/// Files on this machine's file systems; a [`Location`] is a path.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalStorage;

/// One folder a walk reached: its path as the walk spelled it, and its files
/// (names, sorted) with their sizes. Folders' own entries are not files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkedFolder {
    pub path: String,
    pub files: Vec<(String, u64)>,
}

/// A folder that could not be read during a walk (Python's `os.walk` error).
#[derive(Debug)]
pub struct WalkError {
    pub path: String,
    pub error: io::Error,
}

/// The folders under `root` (itself first), depth first with names sorted, as
/// Python's `os.walk(root, followlinks=True)` with sorted names gives them,
/// each with the files whose names `keep` accepts (files: regular files, through
/// links too). A folder reached again through a symbolic link (a loop, or two
/// links to one folder) is not listed again. An explicit stack: the depth of
/// the tree never becomes the depth of the call stack.
pub fn walk(root: &str, keep: &dyn Fn(&str) -> bool) -> Result<Vec<WalkedFolder>, WalkError> {
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut out = Vec::new();
    let mut stack = vec![root.to_string()];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).map_err(|error| WalkError {
            path: dir.clone(),
            error,
        })?;
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|error| WalkError {
                path: dir.clone(),
                error,
            })?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let is_dir = entry_is_dir(&entry); // as os.walk's entry.is_dir()
            if is_dir {
                dirs.push(name);
            } else {
                files.push(name);
            }
        }
        let real = fs::canonicalize(&dir).unwrap_or_else(|_| PathBuf::from(&dir));
        if !seen.insert(real) {
            continue; // a symbolic link loop
        }
        dirs.sort();
        files.sort();
        let mut kept = Vec::new();
        for name in files {
            if !keep(&name) {
                continue;
            }
            let path = join(&dir, &name);
            if let Ok(meta) = fs::metadata(&path) {
                if meta.is_file() {
                    kept.push((name, meta.len()));
                }
            }
        }
        for name in dirs.iter().rev() {
            stack.push(join(&dir, name));
        }
        out.push(WalkedFolder { path: dir, files: kept });
    }
    Ok(out)
}

fn io_error(location: &Location, error: io::Error) -> StorageError {
    match error.kind() {
        io::ErrorKind::NotFound => StorageError::NotFound(location.clone()),
        io::ErrorKind::PermissionDenied => StorageError::PermissionDenied(location.clone()),
        _ => StorageError::Other {
            location: location.clone(),
            message: error.to_string(),
        },
    }
}

impl Storage for LocalStorage {
    fn list(&self, prefix: &Location, recursive: bool) -> Result<Vec<Entry>, StorageError> {
        let root = prefix.as_str();
        let meta = fs::metadata(root).map_err(|e| io_error(prefix, e))?;
        if !meta.is_dir() {
            return Ok(vec![Entry {
                location: prefix.clone(),
                size: meta.len(),
            }]);
        }
        let folders = if recursive {
            walk(root, &|_| true).map_err(|e| io_error(&Location::new(e.path), e.error))?
        } else {
            let mut files = Vec::new();
            for entry in fs::read_dir(root).map_err(|e| io_error(prefix, e))? {
                let entry = entry.map_err(|e| io_error(prefix, e))?;
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                if let Ok(meta) = fs::metadata(entry.path()) {
                    if meta.is_file() {
                        files.push((name, meta.len()));
                    }
                }
            }
            files.sort();
            vec![WalkedFolder {
                path: root.to_string(),
                files,
            }]
        };
        Ok(folders
            .into_iter()
            .flat_map(|folder| {
                let dir = folder.path;
                folder.files.into_iter().map(move |(name, size)| Entry {
                    location: Location::new(join(&dir, &name)),
                    size,
                })
            })
            .collect())
    }

    fn size(&self, location: &Location) -> Result<Option<u64>, StorageError> {
        match fs::metadata(location.as_str()) {
            Ok(meta) if meta.is_file() => Ok(Some(meta.len())),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory => Ok(None),
            Err(e) => Err(io_error(location, e)),
        }
    }

    fn read_range(&self, location: &Location, range: Range<u64>) -> Result<Buffer, StorageError> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = fs::File::open(location.as_str()).map_err(|e| io_error(location, e))?;
        let size = file.metadata().map_err(|e| io_error(location, e))?.len();
        if range.start > range.end || range.end > size {
            return Err(StorageError::OutOfRange {
                location: location.clone(),
                start: range.start,
                end: range.end,
                size,
            });
        }
        // The length is checked against the file's size above before anything is allocated.
        let mut bytes = vec![0u8; (range.end - range.start) as usize];
        file.seek(SeekFrom::Start(range.start))
            .map_err(|e| io_error(location, e))?;
        file.read_exact(&mut bytes).map_err(|e| io_error(location, e))?;
        Ok(Buffer::from_vec(bytes))
    }

    fn is_local(&self) -> bool {
        true
    }

    fn map(&self, location: &Location) -> Result<Option<Buffer>, StorageError> {
        let file = fs::File::open(location.as_str()).map_err(|e| io_error(location, e))?;
        let size = file.metadata().map_err(|e| io_error(location, e))?.len();
        if size == 0 {
            return Ok(Some(Buffer::from_vec(Vec::<u8>::new()))); // an empty file can't be mapped
        }
        // SAFETY: the map is read-only; a file truncated by another process while mapped
        // faults on access, as with every reader of memory-mapped logs (Kafka's own).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io_error(location, e))?;
        let len = map.len();
        let Some(ptr) = NonNull::new(map.as_ptr() as *mut u8) else {
            return Ok(Some(Buffer::from_vec(Vec::<u8>::new())));
        };
        // SAFETY: `ptr` points at `len` readable bytes owned by `map`, which the
        // buffer keeps alive (its owner) for as long as any slice of it lives.
        let buffer = unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(map)) };
        Ok(Some(buffer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("kafkabatch-local-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("orders-0")).unwrap();
        fs::create_dir_all(root.join("b/orders-1")).unwrap();
        fs::write(root.join("orders-0/00000000000000000000.log"), b"abcdef").unwrap();
        fs::write(root.join("orders-0/00000000000000000000.index"), b"").unwrap();
        fs::write(root.join("b/orders-1/00000000000000000007.log"), b"xy").unwrap();
        root
    }

    #[test]
    fn walk_follows_links_once_and_never_loops() {
        let root = tree("walk");
        std::os::unix::fs::symlink(&root, root.join("b/orders-1/loop")).unwrap();
        std::os::unix::fs::symlink(root.join("orders-0"), root.join("again")).unwrap();
        let r = root.to_str().unwrap();
        let walked = walk(r, &|name| name.ends_with(".log")).unwrap();
        let got: Vec<(String, Vec<(String, u64)>)> = walked
            .into_iter()
            .map(|f| (f.path.strip_prefix(r).unwrap().to_string(), f.files))
            .collect();
        let log = |n: &str, s| (n.to_string(), s);
        assert_eq!(
            got,
            vec![
                (String::new(), vec![]),
                ("/again".into(), vec![log("00000000000000000000.log", 6)]),
                ("/b".into(), vec![]),
                ("/b/orders-1".into(), vec![log("00000000000000000007.log", 2)]),
            ]
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn list_size_read_and_map() {
        let root = tree("io");
        let r = root.to_str().unwrap();
        let listed = LocalStorage.list(&Location::new(r), true).unwrap();
        let names: Vec<(&str, u64)> = listed.iter().map(|e| (e.location.name(), e.size)).collect();
        assert_eq!(
            names,
            [
                ("00000000000000000007.log", 2),
                ("00000000000000000000.index", 0),
                ("00000000000000000000.log", 6)
            ]
        );
        let file = Location::new(format!("{r}/orders-0/00000000000000000000.log"));
        assert_eq!(LocalStorage.size(&file).unwrap(), Some(6));
        assert_eq!(LocalStorage.size(&Location::new(format!("{r}/nope"))).unwrap(), None);
        assert_eq!(LocalStorage.read_range(&file, 1..4).unwrap().as_slice(), b"bcd");
        assert!(matches!(
            LocalStorage.read_range(&file, 4..9),
            Err(StorageError::OutOfRange { size: 6, .. })
        ));
        let mapped = LocalStorage.map(&file).unwrap().unwrap();
        let view = mapped.slice_with_length(2, 3);
        drop(mapped);
        assert_eq!(view.as_slice(), b"cde");
        let empty = Location::new(format!("{r}/orders-0/00000000000000000000.index"));
        assert_eq!(LocalStorage.map(&empty).unwrap().unwrap().len(), 0);
        assert!(matches!(
            LocalStorage.map(&Location::new(format!("{r}/nope"))),
            Err(StorageError::NotFound(_))
        ));
        fs::remove_dir_all(&root).unwrap();
    }
}
