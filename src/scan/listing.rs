//! Roots to segments: a broker log dir (a folder of `<topic>-<partition>`
//! folders, at any depth), one `<topic>-<partition>` folder, one segment file,
//! a glob of those, local or remote; tiered-storage layouts too, and a manifest
//! named directly stands for its segment.
//!
//! Only `*.log` files are segments (and, remote, `.rsm-manifest`s say how they
//! were stored), except that a file named directly is read whatever its name.
//! Folders a broker is deleting or moving are skipped. When a partition's
//! segments come from several places, [`crate::scan::overlap`] leaves each
//! offset to one segment. Local globs are Python's `glob.glob(recursive=True)`;
//! remote ones match `fnmatch` per name below the prefix before the first glob
//! character.
//!
//! ```no_run
//! use kafkabatch::scan::listing::{list_segments, ListOptions, NoChecks};
//! use kafkabatch::storage::LocalStorage;
//! let listed = list_segments("/var/lib/kafka/data", &LocalStorage, &ListOptions::default(), &NoChecks).unwrap();
//! for s in &listed.segments {
//!     println!("{} {} {:?} {}", s.topic, s.partition, s.base_offset, s.path);
//! }
//! ```

use std::collections::{HashMap, HashSet};
use std::io;

use super::layouts::{is_manifest, layout_reason, manifest_facts, remote_name, sibling, Layout, RemoteName};
use super::naming::{
    basename, folder_topic_partition, is_remote, is_segment_name, is_transient_folder, parent_uri, segment_base_offset,
    text, uri_scheme, without_query,
};
use super::overlap::{resolve, Claim};
use crate::storage::glob::{glob, has_magic, join, split, Pattern};
use crate::storage::local::walk;
use crate::storage::{Location, Storage, StorageError};

/// One segment file of one topic-partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// A local path, or a URI for remote files.
    pub path: String,
    pub topic: String,
    pub partition: i64,
    /// From the file name; `None` for a file named directly whose name isn't an offset.
    pub base_offset: Option<i64>,
    /// The segment's own size (for Aiven, the original `.log`'s).
    pub size: u64,
    pub layout: Layout,
    /// The Aiven manifest object.
    pub manifest: Option<String>,
    pub segment_id: Option<String>,
    pub topic_id: Option<String>,
    /// Offsets below come from an earlier segment.
    pub floor_offset: Option<i64>,
    /// Offsets from here on come from a later segment.
    pub stop_offset: Option<i64>,
    /// Other copies of this segment's offsets the overlap rule left out (read instead when this one is damaged).
    pub twins: Vec<Segment>,
}

impl Segment {
    fn new(path: &str, topic: &str, partition: i64, base_offset: Option<i64>, size: u64, layout: Layout) -> Self {
        Segment {
            path: path.to_string(),
            topic: topic.to_string(),
            partition,
            base_offset,
            size,
            layout,
            manifest: None,
            segment_id: None,
            topic_id: None,
            floor_offset: None,
            stop_offset: None,
            twins: Vec::new(),
        }
    }
}

/// `(topic, partition, base offset, floor offset, path)`, unknowns first: the order of listings.
pub fn sort_key(s: &Segment) -> (&str, i64, i64, i64, &str) {
    (
        &s.topic,
        s.partition,
        s.base_offset.unwrap_or(-1),
        s.floor_offset.unwrap_or(-1),
        &s.path,
    )
}

/// Offset bounds `[start, end)` narrowed to the offsets the overlap rule leaves to `seg`.
pub fn segment_bounds(seg: &Segment, start: Option<i64>, end: Option<i64>) -> (Option<i64>, Option<i64>) {
    let start = match seg.floor_offset {
        Some(floor) => Some(start.map_or(floor, |s| s.max(floor))),
        None => start,
    };
    let end = match seg.stop_offset {
        Some(stop) => Some(end.map_or(stop, |e| e.min(stop))),
        None => end,
    };
    (start, end)
}

/// Segments grouped by `(topic, partition)`, groups in order of first appearance.
pub fn by_partition(segments: Vec<Segment>) -> Vec<Vec<Segment>> {
    let mut at: HashMap<(String, i64), usize> = HashMap::new();
    let mut groups: Vec<Vec<Segment>> = Vec::new();
    for seg in segments {
        let key = (seg.topic.clone(), seg.partition);
        let i = *at.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[i].push(seg);
    }
    groups
}

/// What a listing warns about (the Python package re-emits each as its warning class).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// A remote object left out: an upload in progress or abandoned.
    TieredStorage,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListWarning {
    pub kind: WarningKind,
    pub message: String,
}

/// A remote segment that can't be listed: the object, what is wrong (`layout`,
/// `truncated`, `manifest`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub object: String,
    pub kind: &'static str,
    pub reason: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.object, self.reason)
    }
}

/// The segments, sorted; warnings; and, when asked for, the remote segments that
/// can't be listed with what is known of them.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub segments: Vec<Segment>,
    pub warnings: Vec<ListWarning>,
    pub problems: Vec<(Segment, Problem)>,
}

/// Why a listing failed.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// Nothing at the path, or a glob matching nothing.
    #[error("{0}")]
    NotFound(String),
    /// A folder that may not be read.
    #[error("{0}")]
    PermissionDenied(String),
    /// Names that say no topic or partition (a folder not named `<topic>-<partition>`).
    #[error("{0}")]
    Naming(String),
    /// A remote segment that can't be listed (unless problems are collected), and
    /// the warnings the listing gave before it.
    #[error("{0}")]
    Tiered(Problem, Vec<ListWarning>),
    /// A folder a walk could not read.
    #[error("{path}: {error}")]
    Io { path: String, error: io::Error },
    /// The storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Overrides and choices of a listing.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Every segment's topic, instead of its folder's.
    pub topic: Option<String>,
    /// Every segment's partition, instead of its folder's.
    pub partition: Option<i64>,
    /// Collect remote segments that can't be listed in [`Listing::problems`] instead of failing.
    pub collect_problems: bool,
}

/// How far a segment's bytes really reach: its last batch's last offset, read from the
/// object (a remote segment with its `manifest` and the keys that decrypt it; a plain file
/// when `manifest` is empty); `None` when it can't be read. Listing asks only when a
/// manifest's end offset would hide another copy's offsets, or when a folder's newest plain
/// file has no known end and another copy starts at or after it.
pub trait HeldOffsets {
    fn held_last_offset(&self, log: &str, manifest: &str, base_offset: i64) -> Option<i64>;
}

/// Never confirms a manifest's claim (listings without remote copies never ask).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoChecks;

impl HeldOffsets for NoChecks {
    fn held_last_offset(&self, _: &str, _: &str, _: i64) -> Option<i64> {
        None
    }
}

/// A file found: its folder, its path, its size.
struct Found {
    folder: String,
    path: String,
    size: u64,
}

/// Segments, and the manifests that say how remote ones were stored.
fn is_listed(name: &str) -> bool {
    is_segment_name(name) || name.ends_with(text::MANIFEST)
}

/// The segments under `root` (a path, a URI or a glob of either), sorted by
/// topic, partition and base offset. Local roots are read from the file
/// system, remote ones (any URI but `file:`, or any path of a storage that is
/// not [local](Storage::is_local)) through `storage`, which also answers
/// sizes and manifests for both.
pub fn list_segments(
    root: &str,
    storage: &dyn Storage,
    options: &ListOptions,
    held: &dyn HeldOffsets,
) -> Result<Listing, ListError> {
    let remote = is_remote(root) || !storage.is_local();
    let (found, explicit) = if remote {
        list_remote(root, storage)?
    } else {
        list_local(root)?
    };
    let manifests: HashSet<&str> = found
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| is_manifest(p))
        .collect();
    let listed_paths: HashSet<&str> = found.iter().map(|f| f.path.as_str()).collect();
    let topic = options.topic.as_deref();
    let partition = options.partition;
    let mut listing = Listing::default();
    let mut segments: Vec<Segment> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut unmanifested: Vec<(String, RemoteName)> = Vec::new();
    let problem = |listing: &mut Listing, seg: Segment, p: Problem| -> Result<(), ListError> {
        if !options.collect_problems {
            return Err(ListError::Tiered(p, listing.warnings.clone()));
        }
        listing.problems.push((seg, p));
        Ok(())
    };
    let size_of = |path: &str| storage.size(&Location::new(path));
    for f in &found {
        if is_transient_folder(basename(&f.folder)) && !explicit.contains(&f.path) {
            continue;
        }
        let (mut file_path, mut size) = (f.path.clone(), f.size);
        if manifests.contains(f.path.as_str()) {
            let log_path = sibling(&f.path, ".log");
            if !explicit.contains(&f.path) && listed_paths.contains(log_path.as_str()) {
                continue; // found with its .log
            }
            // A manifest named directly, or matched by a glob its .log doesn't match, stands for its segment.
            match size_of(&log_path)? {
                None => {
                    // a manifest whose segment is gone: never silently
                    let name = remote_name(&log_path);
                    let seg = placeholder(&log_path, name.as_ref(), Some(&f.path), topic, partition);
                    let p = Problem {
                        object: log_path.clone(),
                        kind: "truncated",
                        reason: text::missing_object(&f.path),
                    };
                    problem(&mut listing, seg, p)?;
                    continue;
                }
                Some(log_size) => (file_path, size) = (log_path, log_size),
            }
        }
        let Some(name) = remote_name(&file_path) else {
            let (t, p) = folder_topic_partition(&f.folder, topic, partition).map_err(ListError::Naming)?;
            let seg = Segment::new(
                &file_path,
                &t,
                p,
                segment_base_offset(basename(&file_path)),
                size,
                Layout::Broker,
            );
            insert(&mut segments, &mut index, seg);
            continue;
        };
        let is_explicit = explicit.contains(&file_path);
        match remote_segment(
            &file_path,
            size,
            &name,
            &manifests,
            topic,
            partition,
            is_explicit,
            storage,
        )? {
            Remote::Segment(seg) => insert(&mut segments, &mut index, seg),
            Remote::Undecided => unmanifested.push((file_path, name)),
            Remote::Problem(p) => {
                let seg = placeholder(&file_path, Some(&name), None, topic, partition);
                problem(&mut listing, seg, p)?;
            }
        }
    }
    for (file_path, name) in unmanifested {
        let folder = parent_uri(&file_path);
        let neighbours: Vec<&Segment> = segments.iter().filter(|s| parent_uri(&s.path) == folder).collect();
        if neighbours
            .iter()
            .any(|s| s.manifest.is_some() && holds(s, name.base_offset, held))
        {
            // An abandoned upload whose offsets a completed one (another segment id) holds: nothing is missing.
            listing.warnings.push(ListWarning {
                kind: WarningKind::TieredStorage,
                message: text::abandoned_upload(&file_path),
            });
            continue;
        }
        if neighbours.iter().any(|s| s.base_offset.unwrap_or(0) > name.base_offset) {
            // Segments are uploaded in offset order: a later one is complete, so this is a hole, not an upload.
            let seg = placeholder(&file_path, Some(&name), None, topic, partition);
            let reason = text::missing_manifest(&sibling(&file_path, text::MANIFEST));
            problem(
                &mut listing,
                seg,
                Problem {
                    object: file_path.clone(),
                    kind: "manifest",
                    reason,
                },
            )?;
            continue;
        }
        listing.warnings.push(ListWarning {
            kind: WarningKind::TieredStorage,
            message: text::upload_in_progress(&file_path),
        });
    }
    segments.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
    // (a partition in one broker folder, the usual case, is left as it is)
    segments = resolve_overlaps(segments, held);
    segments.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
    listing.segments = segments;
    Ok(listing)
}

/// Keyed by path: a later find replaces an earlier one in its place.
fn insert(segments: &mut Vec<Segment>, index: &mut HashMap<String, usize>, seg: Segment) {
    match index.get(&seg.path) {
        Some(&at) => segments[at] = seg,
        None => {
            index.insert(seg.path.clone(), segments.len());
            segments.push(seg);
        }
    }
}

/// What is known of a remote segment that can't be read, for reporting it.
fn placeholder(
    path: &str,
    name: Option<&RemoteName>,
    manifest: Option<&str>,
    topic: Option<&str>,
    partition: Option<i64>,
) -> Segment {
    let seg_topic = topic.map(str::to_string).or_else(|| name.and_then(|n| n.topic.clone()));
    let seg_partition = partition.or_else(|| name.and_then(|n| n.partition));
    let layout = match (manifest, name.and_then(|n| n.layout)) {
        (None, Some(layout)) => layout,
        _ => Layout::Aiven,
    };
    let mut seg = Segment::new(
        path,
        seg_topic.as_deref().unwrap_or(""),
        seg_partition.unwrap_or(-1),
        name.map(|n| n.base_offset),
        0,
        layout,
    );
    seg.manifest = manifest.map(str::to_string);
    seg.segment_id = name.map(|n| n.segment_id.clone());
    seg.topic_id = name.and_then(|n| n.topic_id.clone());
    seg
}

enum Remote {
    Segment(Segment),
    /// An Aiven `.log` whose manifest is missing: decided once the folder is listed.
    Undecided,
    Problem(Problem),
}

/// A remote segment from its names.
#[allow(clippy::too_many_arguments)]
fn remote_segment(
    file_path: &str,
    size: u64,
    name: &RemoteName,
    manifests: &HashSet<&str>,
    topic: Option<&str>,
    partition: Option<i64>,
    explicit: bool,
    storage: &dyn Storage,
) -> Result<Remote, ListError> {
    let seg_topic = topic.map(str::to_string).or_else(|| name.topic.clone());
    let seg_partition = partition.or(name.partition);
    let (Some(mut seg_topic), Some(seg_partition)) = (seg_topic, seg_partition) else {
        return Ok(Remote::Problem(Problem {
            object: file_path.to_string(),
            kind: "layout",
            reason: layout_reason(file_path),
        }));
    };
    let manifest = sibling(file_path, text::MANIFEST);
    let listed = manifests.contains(manifest.as_str());
    let size_of = |path: &str| storage.size(&Location::new(path));
    if name.layout == Some(Layout::LocalTiered) || (name.layout.is_none() && !listed) {
        // Folders of your own naming may still hold an Aiven segment with its manifest.
        if !(name.layout.is_none() && size_of(&manifest)?.is_some()) {
            let mut seg = Segment::new(
                file_path,
                &seg_topic,
                seg_partition,
                Some(name.base_offset),
                size,
                Layout::LocalTiered,
            );
            seg.segment_id = Some(name.segment_id.clone());
            seg.topic_id = name.topic_id.clone();
            return Ok(Remote::Segment(seg));
        }
    } else if !listed && size_of(&manifest)?.is_none() {
        if explicit {
            let reason = text::missing_manifest(&manifest);
            return Ok(Remote::Problem(Problem {
                object: file_path.to_string(),
                kind: "manifest",
                reason,
            }));
        }
        return Ok(Remote::Undecided);
    }
    let facts = manifest_facts(&manifest, || {
        let location = Location::new(manifest.as_str());
        let size = storage.size(&location).ok()??;
        storage
            .read_range(&location, 0..size)
            .ok()
            .map(|b| b.as_slice().to_vec())
    });
    if let Some(fact_topic) = &facts.topic {
        if topic.is_none() && seg_topic != *fact_topic && seg_topic.ends_with(fact_topic.as_str()) {
            // A key prefix without a trailing "/" ("v1.2_") is glued to the topic folder: the manifest names the topic.
            seg_topic = fact_topic.clone();
        }
    }
    let mut seg = Segment::new(
        file_path,
        &seg_topic,
        seg_partition,
        Some(name.base_offset),
        facts.original_size.unwrap_or(size),
        Layout::Aiven,
    );
    seg.manifest = Some(manifest);
    seg.segment_id = Some(name.segment_id.clone());
    seg.topic_id = name.topic_id.clone();
    seg.stop_offset = facts.end_offset.map(|end| end.saturating_add(1));
    Ok(Remote::Segment(seg))
}

/// Whether an Aiven segment holds `offset`: its base offset, or one up to its manifest's end
/// offset that its bytes confirm (a manifest's claim alone could hide a hole).
fn holds(seg: &Segment, offset: i64, held: &dyn HeldOffsets) -> bool {
    let base = seg.base_offset.unwrap_or(0);
    if base == offset {
        return true;
    }
    let (Some(stop), Some(manifest)) = (seg.stop_offset, seg.manifest.as_deref()) else {
        return false;
    };
    if base > offset || offset >= stop {
        return false;
    }
    held.held_last_offset(&seg.path, manifest, base)
        .is_some_and(|last| last >= offset)
}

/// A partition's segments as the overlap rule takes them: broker log dirs alone are copies
/// of each other only where their folders have the same name (`orders-0` in a backup and in
/// the live dir; a `topic` or `partition` override can give two different logs one key), so
/// they are grouped by folder name; segments of any other layout are one group.
fn copies_of(partition: Vec<Segment>) -> Vec<Vec<Segment>> {
    if !partition.iter().all(|s| s.layout == Layout::Broker) {
        return vec![partition];
    }
    let mut groups: Vec<(String, Vec<Segment>)> = Vec::new();
    for seg in partition {
        let name = basename(parent_uri(&seg.path)).to_string();
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, group)) => group.push(seg),
            None => groups.push((name, vec![seg])),
        }
    }
    groups.into_iter().map(|(_, group)| group).collect()
}

/// The overlap rule on each partition whose segments come from more than one folder or
/// layout: `floor_offset`/`stop_offset` set, shadowed segments dropped (kept as twins of the
/// segment that reads their offsets). A segment's last offset is its manifest's end offset,
/// else the next segment's base offset in its own folder, minus one; the newest plain file of
/// a folder that another copy's segments start at or after is asked of `held` (with an empty
/// manifest: its last batch header's offset).
pub fn resolve_overlaps(segments: Vec<Segment>, held: &dyn HeldOffsets) -> Vec<Segment> {
    let mut out = Vec::new();
    for group in by_partition(segments).into_iter().flat_map(copies_of) {
        let one_folder = group.iter().all(|s| parent_uri(&s.path) == parent_uri(&group[0].path));
        if (one_folder && group.iter().all(|s| s.layout == Layout::Broker))
            || group.iter().any(|s| s.base_offset.is_none())
        {
            out.extend(group);
            continue;
        }
        let base = |s: &Segment| s.base_offset.unwrap_or(0);
        let mut folders: Vec<(&str, Vec<usize>)> = Vec::new();
        for (i, s) in group.iter().enumerate() {
            let folder = parent_uri(&s.path);
            match folders.iter_mut().find(|(f, _)| *f == folder) {
                Some((_, members)) => members.push(i),
                None => folders.push((folder, vec![i])),
            }
        }
        let mut ends: Vec<Option<i64>> = vec![None; group.len()];
        let mut claimed = vec![false; group.len()]; // ends that only a manifest says
        let mut cut: Vec<Option<i64>> = vec![None; group.len()]; // where a segment holding more than its end must stop
        for (_, members) in &mut folders {
            members.sort_by_key(|&i| base(&group[i]));
            for &i in members.iter() {
                let s = &group[i];
                let later = members.iter().map(|&m| base(&group[m])).filter(|&b| b > base(s)).min();
                if let Some(next) = later {
                    // the next segment of its own folder: names, as for broker folders
                    ends[i] = Some(next - 1);
                    if s.layout == Layout::Aiven && s.stop_offset.is_some_and(|stop| stop > next) {
                        // It claims more (another upload, cut otherwise): the next segment takes over there.
                        cut[i] = Some(next);
                    }
                } else if let (Layout::Aiven, Some(stop)) = (s.layout, s.stop_offset) {
                    ends[i] = Some(stop - 1); // the manifest's end offset: a claim, checked below
                    claimed[i] = true;
                }
            }
        }
        for i in 0..group.len() {
            let s = &group[i];
            if ends[i].is_some() || s.layout == Layout::Aiven {
                continue;
            }
            // The newest plain file of its folder: its end is known only from its bytes, asked for
            // when another copy starts at or after it (two copies of a log dir, one longer).
            let (folder, b) = (parent_uri(&s.path), base(s));
            if group.iter().any(|o| parent_uri(&o.path) != folder && base(o) >= b) {
                ends[i] = held.held_last_offset(&s.path, "", b);
            }
        }
        for i in 0..group.len() {
            let Some(claimed_end) = ends[i].filter(|_| claimed[i]) else {
                continue;
            };
            let s = &group[i];
            let folder = parent_uri(&s.path);
            let b = base(s);
            if group
                .iter()
                .any(|o| parent_uri(&o.path) != folder && b <= base(o) && base(o) <= claimed_end)
            {
                // The claim would hide offsets of another copy: trusted only as far as the bytes confirm it.
                ends[i] = held.held_last_offset(&s.path, s.manifest.as_deref().unwrap_or(""), b);
            }
        }
        let mut claims: Vec<Claim> = group
            .iter()
            .enumerate()
            .map(|(i, s)| Claim::new(base(s), ends[i], s.layout.rank(), s.path.clone()))
            .collect();
        resolve(&mut claims);
        let dropped: Vec<usize> = (0..group.len()).filter(|&i| claims[i].dropped).collect();
        let twins_of = |first: i64| -> Vec<Segment> {
            dropped
                .iter()
                .filter(|&&d| claims[d].covers(first))
                .map(|&d| Segment {
                    floor_offset: None,
                    stop_offset: None,
                    ..group[d].clone()
                })
                .collect()
        };
        let mut kept = Vec::new();
        for (i, claim) in claims.iter().enumerate() {
            if claim.dropped {
                continue;
            }
            let first = claim.floor.map_or(claim.base, |floor| claim.base.max(floor));
            let stop = match cut[i] {
                None => claim.stop,
                // Python's `claim.stop or cut`: a stop at 0 counts as none.
                Some(c) => Some(claim.stop.filter(|&s| s != 0).map_or(c, |s| c.min(s))),
            };
            kept.push((i, claim.floor, stop, twins_of(first)));
        }
        for (i, floor, stop, twins) in kept {
            let mut seg = group[i].clone();
            seg.floor_offset = floor;
            seg.stop_offset = stop;
            seg.twins = twins;
            out.push(seg);
        }
    }
    out
}

/// The storage of a root (a path, URI or glob), as [`list_roots`] asks for it.
pub type RootStorage<'a> = dyn Fn(&str) -> Result<std::sync::Arc<dyn Storage>, ListError> + 'a;

/// The segments under each of `roots` (see [`list_segments`]; `storage` gives
/// each root's storage), joined: a file found under two roots is listed once
/// (as the first root found it), partitions come in the order of the roots that
/// hold them (each in offset order), and where a partition's segments come from
/// several places (a bucket and a broker log dir) each of its offsets is left to
/// one segment by the rule [`list_segments`] applies within one root; the copies
/// left out within a root stay the twins of the segment kept there. Warnings
/// and problems are those of every root, in order.
pub fn list_roots(
    roots: &[String],
    storage: &RootStorage<'_>,
    options: &ListOptions,
    held: &dyn HeldOffsets,
) -> Result<Listing, ListError> {
    if let [root] = roots {
        return list_segments(root, storage(root)?.as_ref(), options, held);
    }
    let mut joined = Listing::default();
    let mut at: HashMap<String, usize> = HashMap::new();
    for root in roots {
        let listed = match list_segments(root, storage(root)?.as_ref(), options, held) {
            Ok(listed) => listed,
            Err(ListError::Tiered(p, warned)) => {
                // what the roots before said, then what this one said before it stopped
                let mut all = std::mem::take(&mut joined.warnings);
                all.extend(warned);
                return Err(ListError::Tiered(p, all));
            }
            Err(e) => return Err(e),
        };
        joined.warnings.extend(listed.warnings);
        joined.problems.extend(listed.problems);
        for seg in listed.segments {
            if !at.contains_key(&seg.path) {
                at.insert(seg.path.clone(), joined.segments.len());
                joined.segments.push(seg);
            }
        }
    }
    // Partitions in the order the roots give them; each partition's segments in offset order.
    let mut order: HashMap<(String, i64), usize> = HashMap::new();
    for seg in &joined.segments {
        let next = order.len();
        order.entry((seg.topic.clone(), seg.partition)).or_insert(next);
    }
    let rank = |s: &Segment| {
        order
            .get(&(s.topic.clone(), s.partition))
            .copied()
            .unwrap_or(usize::MAX)
    };
    joined
        .segments
        .sort_by(|a, b| (rank(a), sort_key(a)).cmp(&(rank(b), sort_key(b))));
    let found: HashMap<String, Vec<Segment>> = joined
        .segments
        .iter()
        .filter(|s| !s.twins.is_empty())
        .map(|s| (s.path.clone(), s.twins.clone()))
        .collect();
    let bare = joined
        .segments
        .into_iter()
        .map(|s| Segment { twins: Vec::new(), ..s })
        .collect();
    let mut resolved = resolve_overlaps(bare, held);
    for seg in &mut resolved {
        if let Some(within) = found.get(&seg.path) {
            let mut twins = within.clone();
            twins.append(&mut seg.twins);
            seg.twins = twins;
        }
    }
    resolved.sort_by(|a, b| (rank(a), sort_key(a)).cmp(&(rank(b), sort_key(b))));
    joined.segments = resolved;
    Ok(joined)
}

/// `segments` whose file names match `glob` (Spark's `pathGlobFilter`: an
/// `fnmatch` pattern on the file name alone, case-sensitive), in their order.
pub fn keep_names(segments: &mut Vec<Segment>, glob: &str) {
    let pattern = Pattern::new(glob);
    segments.retain(|s| pattern.matches(basename(&s.path)));
}

// --------------------------------------------------------------------------
// local and remote roots
// --------------------------------------------------------------------------

/// `os.path.normpath` of a POSIX path.
fn normpath(path: &str) -> String {
    let slashes = if path.starts_with("//") && !path.starts_with("///") {
        2
    } else {
        usize::from(path.starts_with('/'))
    };
    let mut parts: Vec<&str> = Vec::new();
    for comp in path.split('/') {
        if comp.is_empty() || comp == "." {
            continue;
        }
        if comp != ".." || (slashes == 0 && parts.is_empty()) || parts.last() == Some(&"..") {
            parts.push(comp);
        } else {
            parts.pop();
        }
    }
    let joined = format!("{}{}", "/".repeat(slashes), parts.join("/"));
    if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// `os.path.abspath`.
fn abspath(path: &str) -> String {
    if path.starts_with('/') {
        return normpath(path);
    }
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| d.to_str().map(str::to_string))
        .unwrap_or_default();
    normpath(&join(&cwd, path))
}

/// Whether this process may list and enter the folder (`os.access(path, R_OK | X_OK)`).
fn can_read_folder(path: &str) -> bool {
    #[cfg(target_os = "linux")]
    {
        match std::ffi::CString::new(path) {
            // SAFETY: a NUL-terminated path; access(2) only reads it.
            Ok(c) => unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::X_OK) == 0 },
            Err(_) => false,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        std::fs::read_dir(path).is_ok()
    }
}

fn list_local(path: &str) -> Result<(Vec<Found>, HashSet<String>), ListError> {
    let exists = |p: &str| std::fs::metadata(p).is_ok();
    let mut found = Vec::new();
    let mut explicit = HashSet::new();
    let (roots, is_glob) = if exists(path) || !has_magic(path) {
        (vec![path.to_string()], false)
    } else {
        let roots = glob(path);
        if roots.is_empty() {
            return Err(ListError::NotFound(text::no_match(path)));
        }
        (roots, true)
    };
    for root in roots {
        match std::fs::metadata(&root) {
            Ok(meta) if meta.is_file() => {
                if is_glob && !is_listed(split(&root).1) {
                    continue;
                }
                if !is_glob {
                    explicit.insert(root.clone());
                }
                let folder = split(&abspath(&root)).0.to_string();
                found.push(Found {
                    folder,
                    path: root,
                    size: meta.len(),
                });
            }
            Ok(meta) if meta.is_dir() => {
                if !can_read_folder(&root) {
                    return Err(ListError::PermissionDenied(text::cant_read_folder(&root)));
                }
                let folders = walk(&root, &is_listed).map_err(|e| ListError::Io {
                    path: e.path,
                    error: e.error,
                })?;
                for folder in folders {
                    for (name, size) in folder.files {
                        found.push(Found {
                            path: join(&folder.path, &name),
                            folder: folder.path.clone(),
                            size,
                        });
                    }
                }
            }
            Ok(_) => {} // neither a file nor a folder (a socket, a pipe)
            Err(_) => return Err(ListError::NotFound(text::does_not_exist(&root))),
        }
    }
    Ok((found, explicit))
}

fn list_remote(uri: &str, storage: &dyn Storage) -> Result<(Vec<Found>, HashSet<String>), ListError> {
    let (base, query) = uri.split_once('?').unwrap_or((uri, ""));
    let suffix = if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    };
    let scheme_end = uri_scheme(base).map_or(0, |s| s.len() + 3);
    let glob_at = base[scheme_end..].find(['*', '?', '[']).map(|at| at + scheme_end);
    let prefix_uri = match glob_at {
        None => base,
        Some(at) => match base[..at].rfind('/') {
            Some(slash) => &base[..slash],
            None => "", // a glob in the first name of a storage's own path (`orders-*`): its root
        },
    };
    let prefix = Location::new(format!("{prefix_uri}{suffix}"));
    let mut explicit = HashSet::new();
    if let Some(size) = storage.size(&prefix)? {
        if glob_at.is_some() {
            return Ok((Vec::new(), explicit));
        }
        explicit.insert(uri.to_string());
        return Ok((
            vec![Found {
                folder: parent_uri(uri).to_string(),
                path: uri.to_string(),
                size,
            }],
            explicit,
        ));
    }
    let entries = match storage.list(&prefix, true) {
        Err(StorageError::NotFound(_)) => return Err(ListError::NotFound(text::does_not_exist(prefix_uri))),
        other => other?,
    };
    let head = prefix_uri.trim_end_matches('/');
    let mut entries: Vec<(String, u64, String)> = entries
        .into_iter()
        .filter_map(|e| {
            let rest = without_query(e.location.as_str()).strip_prefix(head)?.to_string();
            Some((rest, e.size, e.location.as_str().to_string()))
        })
        .collect();
    entries.sort();
    let pattern: Option<Vec<Pattern>> = glob_at.map(|_| {
        base[prefix_uri.len()..]
            .trim_matches('/')
            .split('/')
            .map(Pattern::new)
            .collect()
    });
    let mut matched_any = false;
    let mut found = Vec::new();
    for (rest, size, location) in entries {
        let rel: Vec<&str> = rest.trim_matches('/').split('/').collect();
        if let Some(pattern) = &pattern {
            if rel.len() < pattern.len() || !pattern.iter().zip(&rel).all(|(p, name)| p.matches(name)) {
                continue;
            }
            matched_any = true;
        }
        if !rel.last().is_some_and(|name| is_listed(name)) {
            continue;
        }
        found.push(Found {
            folder: parent_uri(&location).to_string(),
            path: location,
            size,
        });
    }
    if pattern.is_some() && !matched_any {
        return Err(ListError::NotFound(text::no_match(uri)));
    }
    Ok((found, explicit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalStorage;
    use std::fs;
    use std::path::PathBuf;

    const ID: &str = "tqimKeZwStOEOwRzT3L5oQ";
    const TOPIC_ID: &str = "MWJ6FHTfRYy67jzwZdeqSQ";

    fn tree(name: &str, files: &[(&str, &[u8])]) -> PathBuf {
        let root = std::env::temp_dir().join(format!("kafkabatch-listing-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for (path, bytes) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, bytes).unwrap();
        }
        root
    }

    fn list(root: &str, options: &ListOptions) -> Result<Listing, ListError> {
        list_segments(root, &LocalStorage, options, &NoChecks)
    }

    type Summary = (String, i64, Option<i64>, Option<i64>, Option<i64>);

    fn summary(listing: &Listing) -> Vec<Summary> {
        listing
            .segments
            .iter()
            .map(|s| {
                (
                    s.topic.clone(),
                    s.partition,
                    s.base_offset,
                    s.floor_offset,
                    s.stop_offset,
                )
            })
            .collect()
    }

    #[test]
    fn broker_dirs_globs_and_errors() {
        let root = tree(
            "broker",
            &[
                ("d/orders-0/00000000000000000000.log", b"abc"),
                ("d/orders-0/00000000000000000030.log", b""),
                ("d/orders-0/00000000000000000030.index", b""),
                (
                    "d/orders-0.0123456789abcdef0123456789abcdef-delete/00000000000000000000.log",
                    b"",
                ),
                ("d/b1/orders-1/00000000000000001000.log", b""),
                ("d/backup/00000000000000000000.log", b""),
            ],
        );
        let r = root.to_str().unwrap();
        let err = list(&format!("{r}/d"), &ListOptions::default()).unwrap_err();
        assert!(matches!(&err, ListError::Naming(m) if m.starts_with(&format!("folder '{r}/d/backup' is not named"))));
        let listing = list(&format!("{r}/d/*-[0-9]"), &ListOptions::default()).unwrap();
        assert_eq!(
            summary(&listing),
            [
                ("orders".into(), 0, Some(0), None, None),
                ("orders".into(), 0, Some(30), None, None)
            ]
        );
        assert_eq!(listing.segments[0].size, 3);
        let listing = list(&format!("{r}/d/**/orders-1"), &ListOptions::default()).unwrap();
        assert_eq!(summary(&listing), [("orders".into(), 1, Some(1000), None, None)]);
        let options = ListOptions {
            topic: Some("t".into()),
            partition: Some(4),
            ..Default::default()
        };
        assert_eq!(
            list(&format!("{r}/d/backup"), &options).unwrap().segments[0].partition,
            4
        );
        let err = list(&format!("{r}/d/nothing-*"), &ListOptions::default()).unwrap_err();
        assert_eq!(err.to_string(), format!("no Kafka log files match '{r}/d/nothing-*'"));
        let err = list(&format!("{r}/d/nope"), &ListOptions::default()).unwrap_err();
        assert_eq!(err.to_string(), format!("Kafka log path does not exist: '{r}/d/nope'"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn remote_through_a_storage_and_the_overlap_rule() {
        let manifest = br#"{"chunkIndex":{"originalFileSize":7},"remoteLogSegmentMetadata":{"endOffset":99}}"#;
        let aiven = format!("bucket/orders-{TOPIC_ID}/0");
        let root = tree(
            "remote",
            &[
                (&format!("{aiven}/00000000000000000000-{ID}.log"), b"xx"),
                (&format!("{aiven}/00000000000000000000-{ID}.rsm-manifest"), manifest),
                (&format!("{aiven}/00000000000000000200-{ID}.log"), b"no manifest"),
                ("broker/orders-0/00000000000000000050.log", b""),
                ("broker/orders-0/00000000000000000150.log", b""),
            ],
        );
        let r = root.to_str().unwrap();
        // A storage whose locations are `mem://` URIs over the local tree.
        #[derive(Debug)]
        struct Mem(String);
        impl Mem {
            fn local(&self, l: &Location) -> Location {
                Location::new(l.as_str().replacen("mem://", &self.0, 1))
            }
        }
        impl Storage for Mem {
            fn list(&self, prefix: &Location, recursive: bool) -> Result<Vec<crate::storage::Entry>, StorageError> {
                let entries = LocalStorage.list(&self.local(prefix), recursive)?;
                Ok(entries
                    .into_iter()
                    .map(|e| crate::storage::Entry {
                        location: Location::new(e.location.as_str().replacen(&self.0, "mem://", 1)),
                        size: e.size,
                    })
                    .collect())
            }
            fn size(&self, l: &Location) -> Result<Option<u64>, StorageError> {
                LocalStorage.size(&self.local(l))
            }
            fn read_range(&self, l: &Location, r: std::ops::Range<u64>) -> Result<arrow_buffer::Buffer, StorageError> {
                LocalStorage.read_range(&self.local(l), r)
            }
        }
        let mem = Mem(format!("{r}/"));
        let listing = list_segments("mem://bucket", &mem, &ListOptions::default(), &NoChecks).unwrap();
        // The overlap rule leaves a lone copy everything: its manifest's end is no stop.
        assert_eq!(summary(&listing), [("orders".into(), 0, Some(0), None, None)]);
        assert_eq!(listing.segments[0].size, 7);
        assert_eq!(listing.warnings.len(), 1);
        assert_eq!(
            listing.warnings[0].message,
            format!("mem://bucket/orders-{TOPIC_ID}/0/00000000000000000200-{ID}.log: no .rsm-manifest beside it (an upload in progress or abandoned); left out")
        );
        let err = list_segments("mem://bucket/x*", &mem, &ListOptions::default(), &NoChecks).unwrap_err();
        assert_eq!(err.to_string(), "no Kafka log files match 'mem://bucket/x*'");
        let err = list_segments("mem://nope", &mem, &ListOptions::default(), &NoChecks).unwrap_err();
        assert_eq!(err.to_string(), "Kafka log path does not exist: 'mem://nope'");
        // The bucket's segment and a broker dir: every offset once.
        let both = list_segments("mem://bucket", &mem, &ListOptions::default(), &NoChecks)
            .unwrap()
            .segments;
        let broker = list(&format!("{r}/broker"), &ListOptions::default()).unwrap().segments;
        let mut all = both.into_iter().chain(broker).collect::<Vec<_>>();
        all.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        let resolved = resolve_overlaps(all, &NoChecks);
        type Got = (Layout, Option<i64>, Option<i64>, Option<i64>);
        let mut got: Vec<Got> = resolved
            .iter()
            .map(|s| (s.layout, s.base_offset, s.floor_offset, s.stop_offset))
            .collect();
        got.sort_by_key(|g| g.1);
        // The manifest's claim (to 99) would hide the broker's 50..: unconfirmed, so its end is unknown.
        assert_eq!(
            got,
            [
                (Layout::Aiven, Some(0), None, Some(50)),
                (Layout::Broker, Some(50), None, None),
                (Layout::Broker, Some(150), None, None)
            ]
        );
        // The same two places as two roots of one listing: joined by the same rule, in the roots' order.
        let mem = std::sync::Arc::new(mem);
        let storage = |root: &str| -> Result<std::sync::Arc<dyn Storage>, ListError> {
            Ok(if root.starts_with("mem://") {
                mem.clone()
            } else {
                std::sync::Arc::new(LocalStorage)
            })
        };
        let roots = [
            "mem://bucket".to_string(),
            format!("{r}/broker"),
            format!("{r}/broker/orders-0"),
        ];
        let joined = list_roots(&roots, &storage, &ListOptions::default(), &NoChecks).unwrap();
        let got: Vec<Got> = joined
            .segments
            .iter()
            .map(|s| (s.layout, s.base_offset, s.floor_offset, s.stop_offset))
            .collect();
        assert_eq!(
            got,
            [
                (Layout::Aiven, Some(0), None, Some(50)),
                (Layout::Broker, Some(50), None, None),
                (Layout::Broker, Some(150), None, None)
            ]
        );
        assert_eq!(joined.warnings.len(), 1, "the bucket's warning is kept");
        let mut named = joined.segments;
        keep_names(&mut named, "*0150.log");
        assert_eq!(named.len(), 1);
        assert!(named[0].path.ends_with("/broker/orders-0/00000000000000000150.log"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn problems_are_collected_with_what_is_known() {
        let root = tree(
            "problems",
            &[(&format!("odd/folders/00000000000000000042-{ID}.log"), b"")],
        );
        let r = root.to_str().unwrap();
        let err = list(&format!("{r}/odd"), &ListOptions::default()).unwrap_err();
        let ListError::Tiered(p, warned) = err else {
            panic!("{err:?}")
        };
        assert!(warned.is_empty());
        assert_eq!(p.kind, "layout");
        assert!(p.reason.starts_with("named like a remote segment"));
        let listing = list(
            &format!("{r}/odd"),
            &ListOptions {
                collect_problems: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(listing.segments.is_empty());
        let (seg, _) = &listing.problems[0];
        assert_eq!(
            (seg.topic.as_str(), seg.partition, seg.base_offset, seg.layout),
            ("", -1, Some(42), Layout::Aiven)
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn bounds_and_paths() {
        let mut s = Segment::new("/x/0.log", "t", 0, Some(0), 0, Layout::Aiven);
        s.floor_offset = Some(10);
        s.stop_offset = Some(20);
        assert_eq!(segment_bounds(&s, None, None), (Some(10), Some(20)));
        assert_eq!(segment_bounds(&s, Some(15), Some(30)), (Some(15), Some(20)));
        assert_eq!(normpath("//a/./b/../c/"), "//a/c");
        assert_eq!(normpath("../x"), "../x");
        assert_eq!(normpath("/.."), "/");
    }
}
