//! The `kafka-log` Spark source's options: Spark's string map (names are
//! case-insensitive) → a typed [`ScanOptions`], checked once, with the same
//! error texts whichever front end (the Python source, the JVM source) reads
//! them; and [`ScanOptions::scan`], the [`Scan`] they describe.
//!
//! What a [`Scan`] does not do (typed values, `internalTopic`, the number of
//! tasks, rows per Arrow batch, streaming limits) stays a parsed field the
//! front end reads.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use super::naming::quote;
use super::plan::{Scan, ScanError, ScanIsolation};
use crate::decode::{OnError, DEFAULT_MAX_DECOMPRESSED_SIZE};

/// Default `maxBytesPerPartition`: segments larger than this are split at batch boundaries.
pub const DEFAULT_MAX_BYTES_PER_PARTITION: u64 = 128 << 20;

/// Default `maxRecordsPerBatch`: rows per Arrow batch handed to Spark.
pub const DEFAULT_MAX_RECORDS_PER_BATCH: i64 = 10_000;

/// The options of typed values and keys (JSON, Avro, Protobuf, Schema Registry).
pub const VALUE_OPTIONS: &[&str] = &[
    "valueFormat",
    "valueSchema",
    "keyFormat",
    "keySchema",
    "valueMessage",
    "valueDescriptorSet",
    "keyMessage",
    "keyDescriptorSet",
    "schemaRegistry",
    "schemaRegistry.basic.auth.user.info",
    "schemaRegistry.bearer.auth.token",
    "onValueError",
];

/// The options that are not about typed values.
const SOURCE_OPTIONS: &[&str] = &[
    // where to read
    "path",
    "paths",
    "pathGlobFilter",
    "recursiveFileLookup",
    // which storage reads remote roots: auto, hadoop (Hadoop's FileSystem, JVM source) or native (object_store)
    "storage",
    "topic",
    "partition",
    // tiered storage: key-pair id -> PEM private key (JSON object, or ID=PEM,ID=PEM)
    "tieredKeys",
    // which records are visible
    "isolation",
    "kafka.isolation.level",
    "includeControl",
    "validateCrc",
    "mode",
    "maxDecompressedSize",
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "endingTimestamp",
    // planning
    "minPartitions",
    "maxBytesPerPartition",
    "maxRecordsPerBatch",
    "threads",
    // streaming (ignored by batch reads, as Spark's Kafka source does)
    "maxOffsetsPerTrigger",
    "maxBytesPerTrigger",
    "failOnDataLoss",
];

/// Kafka's internal topics as typed struct columns.
const INTERNAL_OPTIONS: &[&str] = &["internalTopic", "definitions"];

/// Every option of the `kafka-log` source, in its documented spelling
/// (names are case-insensitive, as Spark's are). Any other name fails: a
/// misspelled `isolation` must not silently return aborted transactions.
pub const KNOWN_OPTIONS: [&str; SOURCE_OPTIONS.len() + VALUE_OPTIONS.len() + INTERNAL_OPTIONS.len()] =
    joined([SOURCE_OPTIONS, VALUE_OPTIONS, INTERNAL_OPTIONS]);

/// The lists one after the other (`N` their total length).
const fn joined<const N: usize>(lists: [&[&'static str]; 3]) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut k, mut l) = (0, 0);
    while l < lists.len() {
        let mut i = 0;
        while i < lists[l].len() {
            out[k] = lists[l][i];
            (k, i) = (k + 1, i + 1);
        }
        l += 1;
    }
    out
}

/// Options people bring from Spark's file sources or Spark's Kafka source,
/// with what to do instead (a plain "did you mean" would mislead).
const OPTION_ADVICE: &[(&str, &str)] = &[
    (
        "ignorecorruptfiles",
        "use option mode=DROPMALFORMED or PERMISSIVE to skip corrupt batches",
    ),
    (
        "ignoremissingfiles",
        "segments are listed once, at load(); a segment deleted before it is read fails the task",
    ),
    (
        "modifiedbefore",
        "records are chosen by their own time: use endingTimestamp",
    ),
    (
        "modifiedafter",
        "records are chosen by their own time: use startingTimestamp",
    ),
    (
        "subscribe",
        "kafka-log reads log folders, not a cluster: name them in load(), e.g. load('/data/orders-*')",
    ),
    (
        "subscribepattern",
        "kafka-log reads log folders, not a cluster: name them in load(), e.g. load('/data/orders-*')",
    ),
    (
        "assign",
        "kafka-log reads log folders, not a cluster: name them in load(), e.g. load(['/data/orders-0'])",
    ),
    (
        "kafka.bootstrap.servers",
        "kafka-log reads log folders, not a cluster: pass their path to load()",
    ),
    (
        "includeheaders",
        "the headers column is always there; select the columns you want",
    ),
];

/// Read options of Hadoop's configuration (`fs.s3a.access.key`, ...): names
/// starting with this (any letter case) are not the source's own; the JVM
/// source puts them into the Hadoop configuration of the read, as Spark's
/// file sources do.
pub const HADOOP_OPTION_PREFIX: &str = "fs.";

/// Which storage reads remote roots (option `storage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StorageChoice {
    /// Hadoop's `FileSystem` where Hadoop has one for the URI's scheme (the
    /// JVM source), else the core's object stores.
    #[default]
    Auto,
    /// Hadoop's `FileSystem` for every remote root (the JVM source only).
    Hadoop,
    /// The core's object stores (`object_store`) for every remote root.
    Native,
}

impl StorageChoice {
    /// The option's spelling: `auto`, `hadoop` or `native`.
    pub fn as_str(self) -> &'static str {
        match self {
            StorageChoice::Auto => "auto",
            StorageChoice::Hadoop => "hadoop",
            StorageChoice::Native => "native",
        }
    }
}

const OFFSETS_EXAMPLE: &str = r#"'{"orders": {"0": 23, "1": -2}}'"#;

/// A bad option, in the option's name (the text users see).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError(pub String);

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OptionError {}

impl From<OptionError> for ScanError {
    fn from(e: OptionError) -> Self {
        ScanError::Options(e.0)
    }
}

fn err<T>(text: String) -> Result<T, OptionError> {
    Err(OptionError(text))
}

/// What a read does with a corrupt batch (Spark's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Fail the query.
    FailFast,
    /// Skip it.
    DropMalformed,
    /// Skip it and log what was skipped.
    Permissive,
}

impl Mode {
    /// The option's spelling: `FAILFAST`, `DROPMALFORMED` or `PERMISSIVE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::FailFast => "FAILFAST",
            Mode::DropMalformed => "DROPMALFORMED",
            Mode::Permissive => "PERMISSIVE",
        }
    }

    /// What the decoder does.
    pub fn on_error(self) -> OnError {
        match self {
            Mode::FailFast => OnError::Raise,
            Mode::DropMalformed | Mode::Permissive => OnError::Skip,
        }
    }
}

/// `startingOffsets`/`endingOffsets` as a stream takes them: earliest, latest,
/// or per topic-partition offsets with -2 (earliest) and -1 (latest) kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffsetsSpec {
    Earliest,
    Latest,
    Offsets(BTreeMap<(String, i64), i64>),
}

/// The `kafka-log` source's options, parsed and checked once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanOptions {
    /// `path` then `paths` (a JSON list), never empty.
    pub paths: Vec<String>,
    pub path_glob_filter: Option<String>,
    /// Every segment's topic instead of its folder's.
    pub topic: Option<String>,
    /// Every segment's partition instead of its folder's.
    pub partition: Option<i64>,
    /// As given (a JSON object, or `ID=PEM[,ID=PEM]`, PEMs as text or file paths).
    pub tiered_keys: Option<String>,
    pub isolation: ScanIsolation,
    pub validate_crc: bool,
    pub include_control: bool,
    pub mode: Mode,
    pub max_records_per_batch: i64,
    pub max_bytes_per_partition: u64,
    /// `None`: the front end's default (the machine's cores).
    pub min_partitions: Option<i64>,
    pub max_decompressed_size: u64,
    /// Decode threads per task; `None`: the task's CPUs.
    pub threads: Option<i64>,
    /// `startingOffsets` as a stream takes it.
    pub starting_spec: OffsetsSpec,
    /// `endingOffsets` as a stream takes it.
    pub ending_spec: OffsetsSpec,
    /// The batch read's per topic-partition first offsets (earliest ones left out).
    pub starting_offsets: BTreeMap<(String, i64), i64>,
    /// The batch read's per topic-partition offsets to stop before (latest ones left out).
    pub ending_offsets: BTreeMap<(String, i64), i64>,
    /// Whether `endingOffsets` or `endingTimestamp` was given.
    pub has_ending: bool,
    pub max_offsets_per_trigger: Option<i64>,
    pub max_bytes_per_trigger: Option<u64>,
    pub fail_on_data_loss: bool,
    /// Microseconds since the epoch (inclusive).
    pub starting_timestamp_us: Option<i64>,
    /// Microseconds since the epoch (exclusive).
    pub ending_timestamp_us: Option<i64>,
    /// The typed-value options given, by lower-case name.
    pub value_options: BTreeMap<String, String>,
    /// Which storage reads remote roots (`storage`).
    pub storage: StorageChoice,
    /// The options for Hadoop's configuration (names starting with `fs.`), as given.
    pub hadoop_options: BTreeMap<String, String>,
    /// `internalTopic` as given (auto, a kind, or a JSON object), never empty.
    pub internal_topic: Option<String>,
    /// `definitions` as given, never empty.
    pub definitions: Option<String>,
    /// Why a batch read can't take `startingOffsets` (a stream can).
    batch_error: Option<String>,
}

/// Raise the error for the first name not in `known` (case-insensitive),
/// suggesting the closest known one (or what to use instead).
pub fn check_option_names<'a, I, S>(names: I, known: &[&'a str]) -> Result<(), OptionError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    // lower-case → spelling; the last of equal lower-case spellings wins, as a dict does
    let mut spelled: Vec<(String, &'a str)> = Vec::new();
    for name in known {
        let lower = name.to_lowercase();
        match spelled.iter_mut().find(|(l, _)| *l == lower) {
            Some(entry) => entry.1 = name,
            None => spelled.push((lower, name)),
        }
    }
    for name in names {
        let name = name.as_ref();
        let lower = name.to_lowercase();
        if spelled.iter().any(|(l, _)| *l == lower) {
            continue;
        }
        let hint = match OPTION_ADVICE.iter().find(|(n, _)| *n == lower) {
            Some((_, advice)) => format!(" ({advice})"),
            None => match closest(&lower, spelled.iter().map(|(l, _)| l.as_str())) {
                Some(close) => {
                    let spelling = spelled.iter().find(|(l, _)| l == close).map_or(close, |(_, s)| s);
                    format!("; did you mean {}?", quote(spelling))
                }
                None => String::new(),
            },
        };
        let all: Vec<&str> = spelled.iter().map(|(_, s)| *s).collect();
        return err(format!(
            "unknown kafka-log option {}{hint} Known options (case-insensitive): {}; see docs/spark.md",
            quote(name),
            all.join(", ")
        ));
    }
    Ok(())
}

/// The name in `known` closest to a misspelled `name`, or `None`: Python's
/// `difflib.get_close_matches(name, known, n=1, cutoff=0.6)`, so every front
/// end suggests the same name.
pub fn closest<'a, I>(name: &str, known: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let word: Vec<char> = name.chars().collect();
    let mut best: Option<(f64, &'a str)> = None;
    for candidate in known {
        let a: Vec<char> = candidate.chars().collect();
        let score = similarity(&a, &word);
        if score < 0.6 {
            continue;
        }
        // heapq.nlargest over (score, name): ties go to the larger name
        if best.is_none_or(|(s, n)| score > s || (score == s && candidate > n)) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, n)| n)
}

/// `difflib.SequenceMatcher(None, a, b).ratio()`.
fn similarity(a: &[char], b: &[char]) -> f64 {
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    let mut b2j: HashMap<char, Vec<usize>> = HashMap::new();
    for (j, c) in b.iter().enumerate() {
        b2j.entry(*c).or_default().push(j);
    }
    if b.len() >= 200 {
        // autojunk: elements more frequent than 1% (+1) are "popular" and not indexed
        let ntest = b.len() / 100 + 1;
        b2j.retain(|_, idx| idx.len() <= ntest);
    }
    let mut matched = 0usize;
    let mut queue = vec![(0usize, a.len(), 0usize, b.len())];
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = longest_match(a, b, &b2j, alo, ahi, blo, bhi);
        if k > 0 {
            matched += k;
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
    }
    2.0 * matched as f64 / total as f64
}

/// `SequenceMatcher.find_longest_match` without junk.
fn longest_match(
    a: &[char],
    b: &[char],
    b2j: &HashMap<char, Vec<usize>>,
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
    let mut j2len: HashMap<usize, usize> = HashMap::new();
    for (i, c) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut next: HashMap<usize, usize> = HashMap::new();
        for &j in b2j.get(c).map_or(&[][..], Vec::as_slice) {
            if j < blo {
                continue;
            }
            if j >= bhi {
                break;
            }
            let k = if j == 0 {
                0
            } else {
                j2len.get(&(j - 1)).copied().unwrap_or(0)
            } + 1;
            next.insert(j, k);
            if k > bestsize {
                (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
            }
        }
        j2len = next;
    }
    while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
        (besti, bestj, bestsize) = (besti - 1, bestj - 1, bestsize + 1);
    }
    while besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] == b[bestj + bestsize] {
        bestsize += 1;
    }
    (besti, bestj, bestsize)
}

/// A byte count such as `65536`, `128m`, `64MB` or `1.5GiB` (k/m/g/t are
/// powers of 1024, as in Kafka and Spark configs); `None` when it is not one.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let body = t.strip_suffix("ib").or_else(|| t.strip_suffix('b')).unwrap_or(&t);
    let (number, power) = match body.chars().last() {
        Some(c @ ('k' | 'm' | 'g' | 't')) => (&body[..body.len() - 1], " kmgt".find(c).unwrap_or(0)),
        _ => (body, 0),
    };
    let number = number.trim_end();
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (number, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || fraction.is_some_and(|f| !digits(f)) {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    // int(float(n) * 1024 ** power), as the Python package computes it
    Some((value * 1024f64.powi(power as i32)) as u64)
}

/// A point in time as microseconds since the epoch: epoch milliseconds (a
/// string of digits) or ISO-8601 as Python's `datetime.fromisoformat` takes it
/// (`2024-05-01`, `2024-05-01T12:00:00Z`, `2024-05-01 12:00:00.250+02:00`;
/// no time zone means UTC); `None` when it is neither.
pub fn parse_timestamp_us(text: &str) -> Option<i64> {
    let text = text.trim();
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        let ms: i64 = text.parse().ok()?;
        return ms.checked_mul(1000);
    }
    iso_timestamp_us(text)
}

fn number(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Days from 1970-01-01 to a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `HH[:MM[:SS[.ffffff]]]` or `HH[MM[SS[.ffffff]]]` → microseconds into the day.
fn iso_time_us(t: &str) -> Option<i64> {
    let (clock, fraction) = match t.find(['.', ',']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let parts: Vec<&str> = if clock.contains(':') {
        clock.split(':').collect()
    } else {
        clock
            .as_bytes()
            .chunks(2)
            .map(|c| std::str::from_utf8(c).unwrap_or(""))
            .collect()
    };
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.len() != 2) {
        return None;
    }
    let h = number(parts[0])?;
    let m = parts.get(1).map_or(Some(0), |p| number(p))?;
    let s = parts.get(2).map_or(Some(0), |p| number(p))?;
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    let mut us = 0;
    if let Some(f) = fraction {
        // only after seconds; digits beyond microseconds are dropped
        if parts.len() != 3 || f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let six: String = f.chars().chain(std::iter::repeat('0')).take(6).collect();
        us = six.parse::<i64>().ok()?;
    }
    Some(((h * 60 + m) * 60 + s) * 1_000_000 + us)
}

/// The date an ISO-8601 text starts with (`YYYY-MM-DD`, `YYYYMMDD`,
/// `YYYY-Www[-D]`, `YYYYWww[D]`) as days since the epoch, and the rest.
fn iso_date_days(text: &str) -> Option<(i64, &str)> {
    let b = text.as_bytes();
    let extended = b.get(4) == Some(&b'-');
    let year = number(text.get(0..4)?)?;
    let week_at = if extended { 5 } else { 4 };
    if b.get(week_at) == Some(&b'W') {
        let week = number(text.get(week_at + 1..week_at + 3)?)?;
        let mut end = week_at + 3;
        let mut day = 1;
        let day_at = if extended { end + 1 } else { end };
        let has_day = if extended {
            b.get(end) == Some(&b'-')
        } else {
            b.get(end).is_some_and(u8::is_ascii_digit)
        };
        if has_day {
            day = number(text.get(day_at..day_at + 1)?)?;
            end = day_at + 1;
        }
        // Python's rule: week 53 only in years whose 1 January is a Thursday
        // (or a Wednesday in leap years)
        let jan1 = days_from_civil(year, 1, 1);
        let jan1_weekday = (jan1 + 3).rem_euclid(7); // Monday = 0
        let leap = days_in_month(year, 2) == 29;
        let weeks = if jan1_weekday == 3 || (jan1_weekday == 2 && leap) {
            53
        } else {
            52
        };
        if year < 1 || !(1..=weeks).contains(&week) || !(1..=7).contains(&day) {
            return None;
        }
        let jan4 = jan1 + 3;
        let week1_monday = jan4 - (jan4 + 3).rem_euclid(7);
        return Some((week1_monday + (week - 1) * 7 + (day - 1), &text[end..]));
    }
    let (mo, d, rest) = if extended {
        if b.get(7) != Some(&b'-') {
            return None;
        }
        (text.get(5..7)?, text.get(8..10)?, text.get(10..)?)
    } else {
        (text.get(4..6)?, text.get(6..8)?, text.get(8..)?)
    };
    let (mo, d) = (number(mo)?, number(d)?);
    if year < 1 || !(1..=12).contains(&mo) || d < 1 || d > days_in_month(year, mo) {
        return None;
    }
    Some((days_from_civil(year, mo, d), rest))
}

fn iso_timestamp_us(text: &str) -> Option<i64> {
    if !text.is_ascii() {
        return None;
    }
    let (days, rest) = iso_date_days(text)?;
    let mut us = days * 86_400_000_000;
    if rest.is_empty() {
        return Some(us);
    }
    // any one character separates the date from the time
    let rest = &rest[1..];
    let (time, zone) = match rest.find(['Z', '+', '-']) {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    us += iso_time_us(time)?;
    if let Some(zone) = zone {
        if zone == "Z" {
            return Some(us);
        }
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        let offset = iso_time_us(&zone[1..])?;
        us -= sign * offset;
    }
    Some(us)
}

/// An I/O error as Python's `OSError.strerror` says it (no `(os error N)`).
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Python's truthy/falsy option spellings.
const TRUE: &[&str] = &["true", "1", "yes", "on"];
const FALSE: &[&str] = &["false", "0", "no", "off"];

/// Python's `int(text.strip())` for option values (digits, a sign, `_` between digits).
fn python_int(text: &str) -> Option<i64> {
    let t = text.trim();
    let (sign, digits) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    let n: i64 = digits.replace('_', "").parse().ok()?;
    Some(sign * n)
}

/// The options map, lower-cased names (the last of two spellings wins), in the order given.
struct Given {
    names: Vec<String>,
    values: HashMap<String, String>,
}

impl Given {
    fn get(&self, name: &str) -> Option<&str> {
        self.values.get(&name.to_lowercase()).map(String::as_str)
    }

    /// The value, `None` when absent or empty.
    fn text(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    fn bool(&self, name: &str, default: bool) -> Result<bool, OptionError> {
        let Some(value) = self.get(name) else {
            return Ok(default);
        };
        let text = value.trim().to_lowercase();
        if TRUE.contains(&text.as_str()) {
            return Ok(true);
        }
        if FALSE.contains(&text.as_str()) {
            return Ok(false);
        }
        err(format!(
            "kafka-log option '{name}' must be true or false, not {}",
            quote(value)
        ))
    }

    fn int(&self, name: &str, minimum: i64) -> Result<Option<i64>, OptionError> {
        let Some(value) = self.text(name) else {
            return Ok(None);
        };
        let Some(n) = python_int(value) else {
            return err(format!(
                "kafka-log option '{name}' must be an integer, not {}",
                quote(value)
            ));
        };
        if n < minimum {
            return err(format!("kafka-log option '{name}' must be at least {minimum}, not {n}"));
        }
        Ok(Some(n))
    }

    fn size(&self, name: &str, default: u64) -> Result<u64, OptionError> {
        let Some(value) = self.text(name) else {
            return Ok(default);
        };
        parse_size(value).ok_or_else(|| {
            OptionError(format!(
                "kafka-log option '{name}' must be a size in bytes such as 134217728 or '128m', not {}",
                quote(value)
            ))
        })
    }

    fn timestamp(&self, name: &str) -> Result<Option<i64>, OptionError> {
        let Some(value) = self.text(name) else {
            return Ok(None);
        };
        match parse_timestamp_us(value) {
            Some(us) => Ok(Some(us)),
            None => err(format!(
                "kafka-log option '{name}' must be epoch milliseconds or an ISO-8601 timestamp \
                 such as '2024-05-01T12:00:00Z', not {}",
                quote(value)
            )),
        }
    }
}

/// A topic and a partition number.
type TopicPartition = (String, i64);

/// Python's `repr` of a JSON value, as the messages show offsets.
fn json_repr(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => {
                let text = format!("{f:?}");
                text.replace("e", "e+").replace("e+-", "e-")
            }
            _ => n.to_string(),
        },
        Value::String(s) => quote(s),
        Value::Array(items) => format!("[{}]", items.iter().map(json_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", quote(k), json_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The `((topic, partition), offset)` pairs of an offsets JSON option, each offset >= -2.
fn offsets_json(name: &str, value: &str, words: &str, note: &str) -> Result<Vec<(TopicPartition, i64)>, OptionError> {
    let parsed: Option<serde_json::Map<String, serde_json::Value>> = serde_json::from_str(value.trim()).ok();
    let Some(parsed) = parsed else {
        return err(format!(
            "kafka-log option '{name}' must be {words} or JSON like {OFFSETS_EXAMPLE}{note}, not {}",
            quote(value)
        ));
    };
    let mut pairs = Vec::new();
    for (topic, partitions) in &parsed {
        let Some(partitions) = partitions.as_object() else {
            return err(format!(
                "kafka-log option '{name}': topic {} must map partitions to offsets, like {OFFSETS_EXAMPLE}",
                quote(topic)
            ));
        };
        for (part, offset) in partitions {
            let Some(number) = python_int(part) else {
                return err(format!(
                    "kafka-log option '{name}': partition {} of topic {} is not a number",
                    quote(part),
                    quote(topic)
                ));
            };
            match offset.as_i64() {
                Some(o) if o >= -2 => pairs.push(((topic.clone(), number), o)),
                _ => {
                    return err(format!(
                        "kafka-log option '{name}': offset {} for {topic}-{part} must be \
                         an offset >= 0, -2 (earliest) or -1 (latest)",
                        json_repr(offset)
                    ))
                }
            }
        }
    }
    Ok(pairs)
}

/// `startingOffsets`/`endingOffsets` as a stream takes them.
fn offsets_spec(given: &Given, name: &str) -> Result<OffsetsSpec, OptionError> {
    let starting = name == "startingOffsets";
    let Some(value) = given.get(name) else {
        return Ok(if starting {
            OffsetsSpec::Earliest
        } else {
            OffsetsSpec::Latest
        });
    };
    match value.trim().to_lowercase().as_str() {
        "earliest" => return Ok(OffsetsSpec::Earliest),
        "latest" => return Ok(OffsetsSpec::Latest),
        _ => {}
    }
    let words = if starting { "earliest" } else { "latest" };
    let pairs = offsets_json(name, value, words, " (a stream also takes earliest/latest)")?;
    Ok(OffsetsSpec::Offsets(pairs.into_iter().collect()))
}

/// `startingOffsets`/`endingOffsets` as a batch read takes them (Spark's Kafka
/// source's rules): the specific bounds only.
fn offsets_option(given: &Given, name: &str) -> Result<BTreeMap<(String, i64), i64>, OptionError> {
    let starting = name == "startingOffsets";
    let Some(value) = given.get(name) else {
        return Ok(BTreeMap::new());
    };
    let text = value.trim().to_lowercase();
    let open = if starting { "earliest" } else { "latest" };
    if text == open {
        return Ok(BTreeMap::new());
    }
    if text == "earliest" || text == "latest" {
        return err(format!(
            "kafka-log option '{name}' can't be {text} for a batch read (use {open} or JSON like {OFFSETS_EXAMPLE})"
        ));
    }
    let mut bounds = BTreeMap::new();
    for ((topic, partition), offset) in offsets_json(name, value, open, "")? {
        if offset == if starting { -1 } else { -2 } {
            return err(format!(
                "kafka-log option '{name}': {topic}-{partition} can't {} in a batch read",
                if starting {
                    "start at latest (-1)"
                } else {
                    "end at earliest (-2)"
                }
            ));
        }
        if offset >= 0 {
            bounds.insert((topic, partition), offset);
        }
    }
    Ok(bounds)
}

fn paths(given: &Given) -> Result<Vec<String>, OptionError> {
    let mut paths = Vec::new();
    if let Some(list) = given.get("paths") {
        let bad = || {
            OptionError(format!(
                "kafka-log option 'paths' must be a JSON list of paths, not {}",
                quote(list)
            ))
        };
        let parsed: serde_json::Value = serde_json::from_str(list).map_err(|_| bad())?;
        let items = parsed.as_array().ok_or_else(bad)?;
        if let Some(path) = given.get("path") {
            paths.push(path.to_string());
        }
        for item in items {
            paths.push(item.as_str().ok_or_else(bad)?.to_string());
        }
    } else if let Some(path) = given.get("path") {
        paths.push(path.to_string());
    }
    if paths.is_empty() {
        return err("kafka-log needs a path: spark.read.format('kafka-log').load('/var/lib/kafka/data')".into());
    }
    Ok(paths)
}

impl ScanOptions {
    /// Parse and check Spark's options (names in any letter case; of two
    /// spellings of one name, the later wins).
    pub fn parse<I, K, V>(options: I) -> Result<ScanOptions, OptionError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<String>,
    {
        let mut given = Given {
            names: Vec::new(),
            values: HashMap::new(),
        };
        let mut hadoop_options = BTreeMap::new();
        for (name, value) in options {
            let lower = name.as_ref().to_lowercase();
            if lower.starts_with(HADOOP_OPTION_PREFIX) {
                // Hadoop's keys are case-sensitive: kept as given
                hadoop_options.insert(name.as_ref().to_string(), value.into());
                continue;
            }
            if given.values.insert(lower.clone(), value.into()).is_none() {
                given.names.push(lower);
            }
        }
        check_option_names(&given.names, &KNOWN_OPTIONS)?;
        let paths = paths(&given)?;
        let path_glob_filter = given.text("pathGlobFilter").map(str::to_string);
        if !given.bool("recursiveFileLookup", true)? {
            return err(
                "kafka-log option 'recursiveFileLookup' can't be false: kafka-log always looks for \
                 <topic>-<partition> folders at any depth; name the folders to read, or a glob such as /data/orders-*"
                    .into(),
            );
        }
        let storage = match given.get("storage").map(|v| v.trim().to_lowercase()).as_deref() {
            None | Some("auto") => StorageChoice::Auto,
            Some("hadoop") => StorageChoice::Hadoop,
            Some("native") => StorageChoice::Native,
            Some(other) => {
                return err(format!(
                    "kafka-log option 'storage' must be auto, hadoop or native, not {}",
                    quote(other)
                ))
            }
        };
        let topic = given.text("topic").map(str::to_string);
        let partition = given.int("partition", 0)?;
        let tiered_keys = given.text("tieredKeys").map(str::to_string);
        let isolation = given
            .get("isolation")
            .or_else(|| given.get("kafka.isolation.level"))
            .unwrap_or("read_uncommitted")
            .trim()
            .to_lowercase();
        let isolation = match isolation.as_str() {
            "read_uncommitted" => ScanIsolation::ReadUncommitted,
            "read_committed" => ScanIsolation::ReadCommitted,
            _ => {
                return err(format!(
                    "kafka-log option 'isolation' must be read_uncommitted or read_committed, not {}",
                    quote(&isolation)
                ))
            }
        };
        let validate_crc = given.bool("validateCrc", true)?;
        let include_control = given.bool("includeControl", false)?;
        let mode = match given.get("mode").map(|m| m.trim().to_uppercase()).as_deref() {
            None | Some("FAILFAST") => Mode::FailFast,
            Some("DROPMALFORMED") => Mode::DropMalformed,
            Some("PERMISSIVE") => Mode::Permissive,
            Some(_) => {
                return err(format!(
                    "kafka-log option 'mode' must be FAILFAST, DROPMALFORMED or PERMISSIVE, not {}",
                    quote(given.get("mode").unwrap_or_default())
                ))
            }
        };
        let max_records_per_batch = given
            .int("maxRecordsPerBatch", 1)?
            .unwrap_or(DEFAULT_MAX_RECORDS_PER_BATCH);
        let max_bytes_per_partition = given.size("maxBytesPerPartition", DEFAULT_MAX_BYTES_PER_PARTITION)?;
        let min_partitions = given.int("minPartitions", 1)?;
        let max_decompressed_size = given.size("maxDecompressedSize", DEFAULT_MAX_DECOMPRESSED_SIZE as u64)?;
        let threads = given.int("threads", 1)?;
        let starting_spec = offsets_spec(&given, "startingOffsets")?;
        let (starting_offsets, batch_error) = match offsets_option(&given, "startingOffsets") {
            Ok(bounds) => (bounds, None),
            Err(e) => (BTreeMap::new(), Some(e.0)),
        };
        let ending_offsets = offsets_option(&given, "endingOffsets")?;
        let ending_spec = offsets_spec(&given, "endingOffsets")?;
        let has_ending = given.get("endingOffsets").is_some() || given.get("endingTimestamp").is_some();
        let max_offsets_per_trigger = given.int("maxOffsetsPerTrigger", 1)?;
        let max_bytes_per_trigger = match given.text("maxBytesPerTrigger") {
            None => None,
            Some(_) => Some(given.size("maxBytesPerTrigger", 0)?),
        };
        if max_bytes_per_trigger == Some(0) {
            return err("kafka-log option 'maxBytesPerTrigger' must be at least 1 byte".into());
        }
        let fail_on_data_loss = given.bool("failOnDataLoss", true)?;
        let starting_timestamp_us = given.timestamp("startingTimestamp")?;
        let ending_timestamp_us = given.timestamp("endingTimestamp")?;
        let value_options: BTreeMap<String, String> = VALUE_OPTIONS
            .iter()
            .filter_map(|name| {
                let lower = name.to_lowercase();
                given.values.get(&lower).map(|v| (lower, v.clone()))
            })
            .collect();
        let internal_topic = given
            .get("internalTopic")
            .filter(|v| !v.trim().is_empty())
            .map(str::to_string);
        let definitions = given.text("definitions").map(str::to_string);
        if internal_topic.is_none() && definitions.is_some() {
            return err("kafka-log option 'definitions' needs option 'internalTopic' (auto or a kind)".into());
        }
        Ok(ScanOptions {
            paths,
            path_glob_filter,
            topic,
            partition,
            tiered_keys,
            isolation,
            validate_crc,
            include_control,
            mode,
            max_records_per_batch,
            max_bytes_per_partition,
            min_partitions,
            max_decompressed_size,
            threads,
            starting_spec,
            ending_spec,
            starting_offsets,
            ending_offsets,
            has_ending,
            max_offsets_per_trigger,
            max_bytes_per_trigger,
            fail_on_data_loss,
            starting_timestamp_us,
            ending_timestamp_us,
            value_options,
            storage,
            hadoop_options,
            internal_topic,
            definitions,
            batch_error,
        })
    }

    /// Why a front end without Hadoop's `FileSystem` (the Python source) can't
    /// take these options (`storage=hadoop`, `fs.*` settings), if it can't.
    pub fn without_hadoop_error(&self) -> Option<String> {
        if self.storage == StorageChoice::Hadoop {
            return Some(
                "kafka-log option 'storage' is hadoop, but this source has no Hadoop FileSystem: use the JVM \
                 source (kafka-log-jvm), or storage=auto/native for the core's object stores"
                    .into(),
            );
        }
        let names: Vec<&str> = self.hadoop_options.keys().map(String::as_str).collect();
        (!names.is_empty()).then(|| {
            format!(
                "kafka-log options {} are Hadoop settings, which this source does not read: it reads remote \
                 roots through the core's object stores (see docs/tiered-storage.md for their settings), or \
                 use the JVM source (kafka-log-jvm), which reads them through Hadoop's FileSystem",
                names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ")
            )
        })
    }

    /// `internalTopic` and `definitions` resolved (the definition files read; see
    /// [`Internal`](crate::kmsg::appended::Internal)), `None` when nothing is decoded; refused with
    /// typed values (they parse the same key and value).
    pub fn internal(&self) -> Result<Option<crate::kmsg::appended::Internal>, OptionError> {
        let Some(option) = &self.internal_topic else {
            return Ok(None);
        };
        let internal =
            crate::kmsg::appended::Internal::from_options(option, self.definitions.as_deref()).map_err(OptionError)?;
        if internal.is_some() && !self.value_options.is_empty() {
            // as the Python source says them: lower case, sorted
            let names: Vec<&str> = self.value_options.keys().map(String::as_str).collect();
            return err(format!(
                "kafka-log option 'internalTopic' decodes the raw key and value: it can't be combined with {}",
                names.join(", ")
            ));
        }
        Ok(internal)
    }

    /// Why a batch read can't take these options (`startingOffsets` latest), if it can't.
    pub fn batch_error(&self) -> Option<&str> {
        self.batch_error.as_deref()
    }

    /// Refuse what only a stream can do (`startingOffsets` latest), for a batch read.
    pub fn check_batch(&self) -> Result<(), OptionError> {
        match &self.batch_error {
            Some(text) => err(text.clone()),
            None => Ok(()),
        }
    }

    /// Refuse `startingOffsets`/`endingOffsets` JSON naming topic-partitions
    /// with no log among `found` (as a stream does): a typo would read everything.
    pub fn check_named_partitions<'a, I>(&self, found: I) -> Result<(), OptionError>
    where
        I: IntoIterator<Item = (&'a str, i64)>,
    {
        let found: BTreeSet<(&str, i64)> = found.into_iter().collect();
        for (name, named) in [
            ("startingOffsets", &self.starting_offsets),
            ("endingOffsets", &self.ending_offsets),
        ] {
            let unknown: Vec<String> = named
                .keys()
                .filter(|(t, p)| !found.contains(&(t.as_str(), *p)))
                .map(|(t, p)| format!("{t}-{p}"))
                .collect();
            if !unknown.is_empty() {
                let listed: Vec<String> = found.iter().map(|(t, p)| format!("{t}-{p}")).collect();
                return err(format!(
                    "kafka-log option '{name}' names topic-partitions that have no log under {}: {} (found: {})",
                    self.paths.iter().map(|p| quote(p)).collect::<Vec<_>>().join(", "),
                    unknown.join(", "),
                    if listed.is_empty() {
                        "none".to_string()
                    } else {
                        listed.join(", ")
                    }
                ));
            }
        }
        Ok(())
    }

    /// The tiered-storage key pairs, `(id, PEM text)` sorted by id: `tieredKeys`
    /// is a JSON object or `ID=PEM[,ID=PEM]`; a PEM that is not the key's text
    /// (no `-----BEGIN`) is the path of a local file holding it.
    pub fn tiered_key_pairs(&self) -> Result<Vec<(String, String)>, OptionError> {
        let Some(text) = self.tiered_keys.as_deref().map(str::trim) else {
            return Ok(Vec::new());
        };
        let mut pairs: Vec<(String, String)> = Vec::new();
        if text.starts_with('{') {
            let parsed: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(text).map_err(|e| OptionError(format!("tiered_keys: not a JSON object: {e}")))?;
            for (id, pem) in parsed {
                let pem = match pem {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                pairs.push((id, pem));
            }
        } else {
            let items: Vec<&str> = if text.is_empty() {
                Vec::new()
            } else if text.contains("-----BEGIN") {
                vec![text]
            } else {
                text.split(',').collect()
            };
            for item in items {
                let (id, pem) = item.split_once('=').unwrap_or((item, ""));
                if id.trim().is_empty() || pem.trim().is_empty() {
                    let shown = if item.contains("-----BEGIN") {
                        "a PEM text".to_string()
                    } else {
                        quote(item)
                    };
                    return err(format!(
                        "tiered_keys: expected KEY_PAIR_ID=PEM (a file path or the PEM text), not {shown}"
                    ));
                }
                pairs.push((id.trim().to_string(), pem.trim().to_string()));
            }
        }
        let mut resolved = Vec::new();
        for (id, pem) in pairs {
            let pem = if pem.contains("-----BEGIN") {
                pem
            } else {
                std::fs::read_to_string(&pem).map_err(|e| {
                    OptionError(format!(
                        "tiered_keys: can't read the private key file of key pair {} ({pem}): {}",
                        quote(&id),
                        strerror(&e)
                    ))
                })?
            };
            resolved.push((id, pem));
        }
        resolved.sort();
        Ok(resolved)
    }

    /// The [`Scan`] whose context reads splits planned with these options
    /// (a batch read's or a micro-batch's): roots, overrides, isolation, CRC
    /// and control-batch settings, `mode`, the decompression cap and the
    /// tiered keys, without the offset and time bounds (each split carries its own).
    pub fn split_scan(&self) -> Result<Scan, OptionError> {
        Ok(Scan::new(self.paths.iter().cloned())
            .topic_override(self.topic.clone())
            .partition_override(self.partition)
            .isolation(self.isolation)
            .validate_crc(self.validate_crc)
            .include_control(self.include_control)
            .on_error(self.mode.on_error())
            .max_decompressed_size(usize::try_from(self.max_decompressed_size).unwrap_or(usize::MAX))
            .tiered_keys(self.tiered_key_pairs()?)
            .path_glob_filter(self.path_glob_filter.clone()))
    }

    /// The [`Scan`] of a batch read with these options: roots, overrides,
    /// bounds, isolation, CRC and control-batch settings, `mode`, the
    /// decompression cap and the tiered keys. Refuses what only a stream takes.
    pub fn scan(&self) -> Result<Scan, OptionError> {
        self.check_batch()?;
        let mut scan = self
            .split_scan()?
            .timestamp_range_us(self.starting_timestamp_us, self.ending_timestamp_us);
        for ((topic, partition), offset) in &self.starting_offsets {
            scan = scan.partition_start_offset(topic, *partition, *offset);
        }
        for ((topic, partition), offset) in &self.ending_offsets {
            scan = scan.partition_end_offset(topic, *partition, *offset);
        }
        Ok(scan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<ScanOptions, String> {
        ScanOptions::parse(pairs.iter().map(|(k, v)| (*k, v.to_string()))).map_err(|e| e.0)
    }

    fn error(pairs: &[(&str, &str)]) -> String {
        parse(pairs).unwrap_err()
    }

    #[test]
    fn closest_is_difflibs_choice() {
        // Recorded from CPython 3.11: difflib.get_close_matches(word, known, n=1, cutoff=0.6)
        let known: Vec<String> = KNOWN_OPTIONS.iter().map(|n| n.to_lowercase()).collect();
        let pick = |w: &str| closest(w, known.iter().map(String::as_str));
        assert_eq!(pick("isolaton"), Some("isolation"));
        assert_eq!(pick("isolationlevel"), Some("kafka.isolation.level"));
        assert_eq!(pick("startingoffset"), Some("startingoffsets"));
        assert_eq!(pick("maxrecordsperbatches"), Some("maxrecordsperbatch"));
        assert_eq!(pick("validatecrcs"), Some("validatecrc"));
        assert_eq!(pick("valuemesage"), Some("valuemessage"));
        assert_eq!(pick("zzzz"), None);
        assert_eq!(
            closest("abc", ["abd", "abe"]),
            Some("abe"),
            "ties go to the larger name"
        );
        assert_eq!(closest("", ["a"]), None);
    }

    #[test]
    fn unknown_names_suggest_or_advise() {
        let e = error(&[("path", "/d"), ("Isolaton", "x")]);
        assert!(
            // names are lower-cased first, as Spark hands them to Python sources
            e.starts_with("unknown kafka-log option 'isolaton'; did you mean 'isolation'? Known options (case-insensitive): path, paths, pathGlobFilter,"),
            "{e}"
        );
        assert!(e.ends_with("internalTopic, definitions; see docs/spark.md"), "{e}");
        let e = error(&[("path", "/d"), ("ignoreCorruptFiles", "true")]);
        assert!(e.starts_with("unknown kafka-log option 'ignorecorruptfiles' (use option mode=DROPMALFORMED or PERMISSIVE to skip corrupt batches) Known options"), "{e}");
        assert!(error(&[("zzzz", "1")]).starts_with("unknown kafka-log option 'zzzz' Known options"));
    }

    #[test]
    fn storage_and_hadoop_settings() {
        let o = parse(&[
            ("path", "s3a://b/d"),
            ("Storage", " Hadoop "),
            ("fs.s3a.access.KEY", "AK"),
            ("FS.x", "1"),
        ])
        .unwrap();
        assert_eq!(o.storage, StorageChoice::Hadoop);
        // Hadoop's keys are case-sensitive: as given, and not the source's own options
        assert_eq!(
            o.hadoop_options
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect::<Vec<_>>(),
            vec![("FS.x", "1"), ("fs.s3a.access.KEY", "AK")]
        );
        assert!(o
            .without_hadoop_error()
            .unwrap()
            .starts_with("kafka-log option 'storage' is hadoop"));
        let o = parse(&[("path", "/d"), ("fs.s3a.endpoint", "http://h")]).unwrap();
        assert_eq!(o.storage, StorageChoice::Auto);
        assert!(o
            .without_hadoop_error()
            .unwrap()
            .starts_with("kafka-log options 'fs.s3a.endpoint' are Hadoop settings"));
        assert_eq!(
            parse(&[("path", "/d"), ("storage", "native")])
                .unwrap()
                .without_hadoop_error(),
            None
        );
        assert_eq!(
            error(&[("path", "/d"), ("storage", "hdfs")]),
            "kafka-log option 'storage' must be auto, hadoop or native, not 'hdfs'"
        );
        assert!(error(&[("path", "/d"), ("storrage", "auto")])
            .starts_with("unknown kafka-log option 'storrage'; did you mean 'storage'?"));
    }

    #[test]
    fn values_are_checked_in_the_options_words() {
        for (name, value, want) in [
            ("validateCrc", "maybe", "kafka-log option 'validateCrc' must be true or false, not 'maybe'"),
            ("mode", " lenient", "kafka-log option 'mode' must be FAILFAST, DROPMALFORMED or PERMISSIVE, not ' lenient'"),
            ("isolation", "Serializable ", "kafka-log option 'isolation' must be read_uncommitted or read_committed, not 'serializable'"),
            ("maxRecordsPerBatch", "lots", "kafka-log option 'maxRecordsPerBatch' must be an integer, not 'lots'"),
            ("maxRecordsPerBatch", "0", "kafka-log option 'maxRecordsPerBatch' must be at least 1, not 0"),
            ("maxBytesPerPartition", "big", "kafka-log option 'maxBytesPerPartition' must be a size in bytes such as 134217728 or '128m', not 'big'"),
            ("partition", "-1", "kafka-log option 'partition' must be at least 0, not -1"),
            ("startingOffsets", "{orders: 1}", "kafka-log option 'startingOffsets' must be earliest or JSON like '{\"orders\": {\"0\": 23, \"1\": -2}}' (a stream also takes earliest/latest), not '{orders: 1}'"),
            ("startingOffsets", r#"{"orders": {"zero": 5}}"#, "kafka-log option 'startingOffsets': partition 'zero' of topic 'orders' is not a number"),
            ("startingOffsets", r#"{"orders": {"0": "5"}}"#, "kafka-log option 'startingOffsets': offset '5' for orders-0 must be an offset >= 0, -2 (earliest) or -1 (latest)"),
            ("startingOffsets", r#"{"orders": {"0": 1.5}}"#, "kafka-log option 'startingOffsets': offset 1.5 for orders-0 must be an offset >= 0, -2 (earliest) or -1 (latest)"),
            ("startingOffsets", r#"{"orders": [5]}"#, "kafka-log option 'startingOffsets': topic 'orders' must map partitions to offsets, like '{\"orders\": {\"0\": 23, \"1\": -2}}'"),
            ("endingOffsets", "earliest", "kafka-log option 'endingOffsets' can't be earliest for a batch read (use latest or JSON like '{\"orders\": {\"0\": 23, \"1\": -2}}')"),
            ("endingOffsets", r#"{"orders": {"0": -2}}"#, "kafka-log option 'endingOffsets': orders-0 can't end at earliest (-2) in a batch read"),
            ("startingTimestamp", "yesterday", "kafka-log option 'startingTimestamp' must be epoch milliseconds or an ISO-8601 timestamp such as '2024-05-01T12:00:00Z', not 'yesterday'"),
            ("endingTimestamp", "2024-13-45", "kafka-log option 'endingTimestamp' must be epoch milliseconds or an ISO-8601 timestamp such as '2024-05-01T12:00:00Z', not '2024-13-45'"),
            ("paths", "not json", "kafka-log option 'paths' must be a JSON list of paths, not 'not json'"),
            ("maxBytesPerTrigger", "0", "kafka-log option 'maxBytesPerTrigger' must be at least 1 byte"),
            ("definitions", "/defs", "kafka-log option 'definitions' needs option 'internalTopic' (auto or a kind)"),
        ] {
            assert_eq!(error(&[("path", "/d"), (name, value)]), want, "{name}={value}");
        }
        assert_eq!(
            error(&[]),
            "kafka-log needs a path: spark.read.format('kafka-log').load('/var/lib/kafka/data')"
        );
        assert!(error(&[("path", "/d"), ("recursiveFileLookup", "off")])
            .starts_with("kafka-log option 'recursiveFileLookup' can't be false"));
    }

    #[test]
    fn options_in_any_case_parse_into_their_fields() {
        let o = parse(&[
            ("PATH", "/a"),
            ("paths", r#"["/b", "/c"]"#),
            ("validatecrc", "FALSE"),
            ("INCLUDECONTROL", "yes"),
            ("mode", "permissive"),
            ("kafka.isolation.level", "read_committed"),
            ("maxbytesperpartition", "1m"),
            ("maxrecordsperbatch", " +7 "),
            ("startingoffsets", r#"{"orders": {"0": 5, "1": -2}}"#),
            ("endingoffsets", "latest"),
            ("startingtimestamp", "2023-11-14T22:13:21Z"),
            ("endingtimestamp", "1700000060000"),
            ("valueFormat", "json"),
            ("TOPIC", ""),
            ("maxBytesPerTrigger", "1.5k"),
        ])
        .unwrap();
        assert_eq!(o.paths, ["/a", "/b", "/c"]);
        assert_eq!(
            (o.validate_crc, o.include_control, o.mode),
            (false, true, Mode::Permissive)
        );
        assert_eq!(o.isolation, ScanIsolation::ReadCommitted);
        assert_eq!((o.max_bytes_per_partition, o.max_records_per_batch), (1 << 20, 7));
        assert_eq!(o.starting_offsets, BTreeMap::from([(("orders".to_string(), 0), 5)]));
        assert_eq!(
            o.starting_spec,
            OffsetsSpec::Offsets(BTreeMap::from([
                (("orders".to_string(), 0), 5),
                (("orders".to_string(), 1), -2)
            ]))
        );
        assert_eq!(
            (o.ending_spec.clone(), o.ending_offsets.len(), o.has_ending),
            (OffsetsSpec::Latest, 0, true)
        );
        assert_eq!(
            (o.starting_timestamp_us, o.ending_timestamp_us),
            (Some(1_700_000_001_000_000), Some(1_700_000_060_000_000))
        );
        assert_eq!(
            o.value_options,
            BTreeMap::from([("valueformat".to_string(), "json".to_string())])
        );
        assert_eq!((o.topic, o.max_bytes_per_trigger), (None, Some(1536)));
        assert_eq!(o.min_partitions, None);
    }

    #[test]
    fn a_batch_read_cant_start_at_latest_but_a_stream_can() {
        let o = parse(&[("path", "/d"), ("startingOffsets", "latest")]).unwrap();
        assert_eq!(o.starting_spec, OffsetsSpec::Latest);
        assert_eq!(
            o.scan().unwrap_err().0,
            "kafka-log option 'startingOffsets' can't be latest for a batch read (use earliest or JSON like '{\"orders\": {\"0\": 23, \"1\": -2}}')"
        );
        let o = parse(&[("path", "/d"), ("startingOffsets", r#"{"t": {"0": -1}}"#)]).unwrap();
        assert!(o
            .check_batch()
            .unwrap_err()
            .0
            .ends_with("t-0 can't start at latest (-1) in a batch read"));
    }

    #[test]
    fn named_partitions_must_have_logs() {
        let o = parse(&[("path", "/d"), ("endingOffsets", r#"{"t": {"0": 5, "9": 1}}"#)]).unwrap();
        o.check_named_partitions([("t", 0), ("t", 9)]).unwrap();
        assert_eq!(
            o.check_named_partitions([("t", 0), ("t", 1)]).unwrap_err().0,
            "kafka-log option 'endingOffsets' names topic-partitions that have no log under '/d': t-9 (found: t-0, t-1)"
        );
        assert!(o
            .check_named_partitions([])
            .unwrap_err()
            .0
            .ends_with("t-0, t-9 (found: none)"));
    }

    #[test]
    fn sizes_and_timestamps_as_the_python_package_reads_them() {
        assert_eq!(parse_size("64MB"), Some(64 << 20));
        assert_eq!(parse_size(" 128k "), Some(128 << 10));
        assert_eq!(parse_size("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_size("65536"), Some(65536));
        assert_eq!(parse_size("2 t"), Some(2 << 40));
        for bad in ["", "k", "1.k", ".5k", "-1", "1x", "1 kbb", "1e3"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
        let ts = parse_timestamp_us;
        assert_eq!(ts("1700000000000"), Some(1_700_000_000_000_000));
        assert_eq!(ts("-5"), Some(-5000));
        assert_eq!(ts("2023-11-14T22:13:20Z"), Some(1_700_000_000_000_000));
        assert_eq!(
            ts("2023-11-14 22:13:20.25+02:00"),
            Some(1_700_000_000_250_000 - 7_200_000_000)
        );
        assert_eq!(
            ts("2023-11-14T22:13:20.1234567-0130"),
            Some(1_700_000_000_123_456 + 5_400_000_000)
        );
        assert_eq!(ts("2024-05-01"), Some(1_714_521_600_000_000));
        assert_eq!(ts("20240501T1200"), Some(1_714_564_800_000_000));
        assert_eq!(ts("2024-02-29T00"), Some(1_709_164_800_000_000));
        assert_eq!(ts("2024-W18-3"), Some(1_714_521_600_000_000));
        assert_eq!(ts("2024W183T12"), Some(1_714_564_800_000_000));
        assert_eq!(ts("2020-W53"), Some(1_609_113_600_000_000));
        for bad in [
            "yesterday",
            "2024-13-45",
            "2023-02-29",
            "2024-05-01T25:00",
            "2024-05-01T12:00Zx",
            "2024-05",
        ] {
            assert_eq!(ts(bad), None, "{bad}");
        }
    }

    #[test]
    fn options_make_the_scan_of_a_batch_read() {
        let o = parse(&[
            ("path", "/d"),
            ("mode", "DROPMALFORMED"),
            ("startingOffsets", r#"{"t": {"1": 4}}"#),
            ("tieredKeys", "k=-----BEGIN PRIVATE KEY-----x"),
        ])
        .unwrap();
        assert_eq!(
            o.tiered_key_pairs().unwrap(),
            [("k".to_string(), "-----BEGIN PRIVATE KEY-----x".to_string())]
        );
        let text = format!("{:?}", o.scan().unwrap());
        assert!(
            text.contains(r#"roots: ["/d"]"#) && text.contains(r#"("t", 1): 4"#),
            "{text}"
        );
        assert!(!text.contains("BEGIN"), "keys are never shown: {text}");
        let o = parse(&[("path", "/d"), ("tieredKeys", "k=/nowhere/key.pem")]).unwrap();
        assert!(o
            .tiered_key_pairs()
            .unwrap_err()
            .0
            .starts_with("tiered_keys: can't read the private key file of key pair 'k' (/nowhere/key.pem): "));
        let o = parse(&[("path", "/d"), ("tieredKeys", "nokey")]).unwrap();
        assert_eq!(
            o.tiered_key_pairs().unwrap_err().0,
            "tiered_keys: expected KEY_PAIR_ID=PEM (a file path or the PEM text), not 'nokey'"
        );
    }
}
