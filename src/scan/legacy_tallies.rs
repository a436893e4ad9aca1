//! What the legacy message sets (magic 0 and 1) of a local segment file add
//! up to, for [`super::aggregate`]: a wrapper's header does not say how many
//! records it holds (and offsets can't stand in: compaction leaves gaps), so
//! counting them means inflating the wrappers and reading the records, as a
//! read does. That is done once per file and process and remembered, so the
//! next `COUNT(*)` (or `MIN`/`MAX` of offset or timestamp) of the same files
//! is answered from the batch headers of the v2 batches and these tallies.
//!
//! Rules:
//! - only a local file read whole, without bounds, is tallied (a remote
//!   object has no identity here that proves it unchanged: it isn't);
//! - a file is remembered by its identity: canonical path, length,
//!   modification time in nanoseconds and, on unix, device, inode and
//!   change time; an append changes the length, a rewrite (compaction writes
//!   a new file and renames it) the inode and times. A file modified less
//!   than [`SETTLED`] ago is tallied but not remembered (file times have
//!   a coarse granularity: a rewrite within the same tick would keep them);
//! - the tally is of a read with every check on (CRCs validated, errors
//!   raised): a wrapper that fails any check leaves the file untallied, and
//!   the caller aggregates rows under its own options instead;
//! - at most [`LEGACY_TALLY_ENTRIES`] files are remembered; the least
//!   recently used is forgotten first.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::aggregate::{row_partial, Aggregate, Tally};
use super::layouts::Layout;
use super::naming::is_remote;
use super::plan::Split;
use super::read::ReadContext;
use crate::batch::{BatchWalker, WalkEnd};
use crate::decode::{Isolation, OnError};
use crate::storage::{LocalStorage, Location, Storage};

/// How many files' tallies a process remembers (a few hundred bytes each).
pub const LEGACY_TALLY_ENTRIES: usize = 4096;

/// How long ago a file must have been modified for its tally to be remembered.
pub const SETTLED: Duration = Duration::from_secs(2);

/// A local file as it is now: an entry is used only while all of it holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FileId {
    path: PathBuf,
    len: u64,
    modified_ns: i128,
    /// Device, inode and change time (ns) on unix; zeros elsewhere.
    dev: u64,
    ino: u64,
    changed_ns: i128,
    /// The read's cap on a wrapper's decompressed size (a larger one fails the read).
    max_decompressed: usize,
}

fn nanos(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

fn identity(path: &str, max_decompressed: usize) -> Option<FileId> {
    let canonical = std::fs::canonicalize(path).ok()?;
    let meta = std::fs::metadata(&canonical).ok()?;
    if !meta.is_file() {
        return None;
    }
    #[cfg(unix)]
    let (dev, ino, changed_ns) = {
        use std::os::unix::fs::MetadataExt;
        (
            meta.dev(),
            meta.ino(),
            i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        )
    };
    #[cfg(not(unix))]
    let (dev, ino, changed_ns) = (0, 0, 0);
    Some(FileId {
        path: canonical,
        len: meta.len(),
        modified_ns: nanos(meta.modified().ok()?),
        dev,
        ino,
        changed_ns,
        max_decompressed,
    })
}

/// The remembered tallies by canonical path (one state of a file is of use:
/// its latest), each with the identity it holds for and when it was last used.
struct Remembered {
    entries: HashMap<PathBuf, (FileId, Tally, u64)>,
    clock: u64,
}

fn remembered() -> &'static Mutex<Remembered> {
    static CACHE: OnceLock<Mutex<Remembered>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Remembered {
            entries: HashMap::new(),
            clock: 0,
        })
    })
}

fn lookup(id: &FileId) -> Option<Tally> {
    let mut cache = remembered().lock().unwrap_or_else(|e| e.into_inner());
    cache.clock += 1;
    let now = cache.clock;
    match cache.entries.get_mut(&id.path) {
        Some((held, tally, used)) if held == id => {
            *used = now;
            Some(tally.clone())
        }
        _ => None,
    }
}

fn remember(id: FileId, tally: Tally) {
    let mut cache = remembered().lock().unwrap_or_else(|e| e.into_inner());
    cache.clock += 1;
    let now = cache.clock;
    if !cache.entries.contains_key(&id.path) && cache.entries.len() >= LEGACY_TALLY_ENTRIES {
        let oldest = cache
            .entries
            .iter()
            .min_by_key(|(_, (_, _, used))| *used)
            .map(|(path, _)| path.clone());
        if let Some(oldest) = oldest {
            cache.entries.remove(&oldest);
        }
    }
    cache.entries.insert(id.path.clone(), (id, tally, now));
}

/// How many files' tallies are remembered now.
pub fn remembered_files() -> usize {
    remembered().lock().unwrap_or_else(|e| e.into_inner()).entries.len()
}

/// Whether `split` reads a local file with no bound: the only kind tallied.
/// Whether it reads the whole file is checked against the file itself.
pub(super) fn tallied_kind(split: &Split) -> bool {
    split.start == 0
        && split.start_offset.is_none()
        && split.end_offset.is_none()
        && split.start_ts_us.is_none()
        && split.end_ts_us.is_none()
        && split.twins.is_empty()
        && !is_remote(&split.path)
        && split.layout() != Layout::Aiven
}

/// The tally of the legacy message sets of the file `split` reads whole (see
/// the module notes): remembered, or, with `compute`, read (`threads` to
/// decode with, 0 for the decoder's choice) and remembered. `None` when the
/// split is not of the kind tallied, doesn't read the file whole, or a check
/// fails: the caller aggregates rows then.
pub(super) fn legacy_tally(split: &Split, context: &ReadContext, compute: bool, threads: usize) -> Option<Tally> {
    if !tallied_kind(split) {
        return None;
    }
    let max_decompressed = context.options.max_decompressed_size;
    let before = identity(&split.path, max_decompressed)?;
    if before.len != split.end {
        return None;
    }
    if let Some(tally) = lookup(&before) {
        return Some(tally);
    }
    if !compute {
        return None;
    }
    let tally = read_legacy(split, context, threads)?;
    if identity(&split.path, max_decompressed).as_ref() != Some(&before) {
        return None; // changed while it was read
    }
    let settled = SystemTime::now()
        .checked_sub(SETTLED)
        .is_some_and(|t| nanos(t) >= before.modified_ns);
    if settled {
        remember(before, tally.clone());
    }
    Some(tally)
}

/// The legacy tallies of `splits` (see [`legacy_tally`]), read on up to
/// `threads` threads, a file each at a time (one file: the decoder's own threads).
pub(super) fn legacy_tallies(splits: &[&Split], context: &ReadContext, threads: usize) -> Vec<Option<Tally>> {
    let threads = threads.clamp(1, splits.len().max(1));
    if threads == 1 {
        return splits.iter().map(|s| legacy_tally(s, context, true, 0)).collect();
    }
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Tally>>> = Mutex::new(vec![None; splits.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(split) = splits.get(i) else { break };
                let tally = legacy_tally(split, context, true, 1);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = tally;
            });
        }
    });
    out.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Reads the legacy message sets of the file `split` reads whole: each run
/// of consecutive legacy batches as a split of its own, every check on.
fn read_legacy(split: &Split, context: &ReadContext, threads: usize) -> Option<Tally> {
    let data = LocalStorage.map(&Location::new(&split.path)).ok()??;
    let data = data.as_slice().get(..usize::try_from(split.end).ok()?)?;
    let mut runs: Vec<(u64, u64)> = Vec::new();
    let mut walker = BatchWalker::new(data);
    for raw in walker.by_ref() {
        let (start, end) = (raw.position as u64, (raw.position + raw.bytes.len()) as u64);
        if raw.magic() >= 2 {
            continue;
        }
        match runs.last_mut() {
            Some(run) if run.1 == start => run.1 = end,
            _ => runs.push((start, end)),
        }
    }
    if let Some(WalkEnd::Broken(_)) = walker.end() {
        return None;
    }
    let mut strict = context.clone();
    strict.options.validate_crc = true;
    strict.options.on_error = OnError::Raise;
    // legacy messages are never transactional
    strict.options.isolation = Isolation::ReadUncommitted;
    strict.options.threads = threads;
    let asked = [
        Aggregate::Count,
        Aggregate::MinOffset,
        Aggregate::MaxOffset,
        Aggregate::MinTimestamp,
        Aggregate::MaxTimestamp,
    ];
    let mut tally = Tally::default();
    for (start, end) in runs {
        let run = Split {
            start,
            end,
            transactions: None,
            ..split.clone()
        };
        let partial = row_partial(&run, &strict, &asked).ok()?;
        tally.merge(Tally::of_rows(partial.rows, &partial.values, &split.path, start));
    }
    Some(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: usize) -> FileId {
        FileId {
            path: PathBuf::from(format!("/nowhere/kb-bounded-{}/{n}.log", std::process::id())),
            len: n as u64,
            modified_ns: 0,
            dev: 0,
            ino: 0,
            changed_ns: 0,
            max_decompressed: 0,
        }
    }

    #[test]
    fn the_remembered_tallies_are_bounded_and_the_least_recently_used_go_first() {
        let tally = |n: u64| Tally::of_rows(n, &[], "", 0);
        remember(id(0), tally(0));
        for n in 1..LEGACY_TALLY_ENTRIES + 10 {
            remember(id(n), tally(n as u64));
            if n % 64 == 0 {
                // in use: kept
                assert_eq!(lookup(&id(0)), Some(tally(0)));
            }
            assert!(remembered_files() <= LEGACY_TALLY_ENTRIES);
        }
        assert_eq!(lookup(&id(0)), Some(tally(0)));
        let last = LEGACY_TALLY_ENTRIES + 9;
        assert_eq!(lookup(&id(last)), Some(tally(last as u64)));
        // another state of the same file replaces the entry
        let mut grown = id(last);
        grown.len += 1;
        remember(grown.clone(), tally(1));
        assert_eq!(lookup(&id(last)), None);
        assert_eq!(lookup(&grown), Some(tally(1)));
    }
}
