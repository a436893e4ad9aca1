//! Names: `<topic>-<partition>` folders, segment file names, folders a broker
//! is moving or deleting, and the words listing uses for users (all its
//! messages are in [`text`], so every front end says the same).
//!
//! Names are matched as Python's `re` patterns of the Python package match them
//! (a `$` also matches before one final newline); digits are ASCII digits.
//!
//! ```
//! use kafkabatch::scan::naming::{folder_topic_partition, segment_base_offset};
//! assert_eq!(folder_topic_partition("/data/orders-3", None, None).unwrap(), ("orders".into(), 3));
//! assert_eq!(segment_base_offset("00000000000000001234.log"), Some(1234));
//! ```

/// The end of a name as a Python `$` sees it: one final `\n` may follow.
fn before_end(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

/// Whether `text` is one or more ASCII digits.
pub(crate) fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// The number ASCII digits spell, `None` past `i64`.
pub(crate) fn digits_value(text: &str) -> Option<i64> {
    if all_digits(text) {
        text.parse().ok()
    } else {
        None
    }
}

/// Whether `text` starts with a URI scheme (`s3://`, `file://`...), as the
/// Python package's `^[A-Za-z][A-Za-z0-9+.\-]*://`.
pub fn uri_scheme(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    if !bytes.first().is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let end = bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')))?;
    text[end..].starts_with("://").then(|| &text[..end])
}

/// Whether `path` is a remote URI: a scheme other than `file://`.
pub fn is_remote(path: &str) -> bool {
    uri_scheme(path).is_some_and(|s| !s.eq_ignore_ascii_case("file"))
}

/// A URI without its `?query`; a local path as it is (`?` is a character of its names).
pub fn without_query(path: &str) -> &str {
    if uri_scheme(path).is_some() {
        path.split('?').next().unwrap_or(path)
    } else {
        path
    }
}

/// The names of a path or URI (split at `/` and `\`, trailing separators dropped).
pub fn parts(path: &str) -> Vec<&str> {
    without_query(path)
        .trim_end_matches(['/', '\\'])
        .split(['/', '\\'])
        .collect()
}

/// The last name of a path or URI.
pub fn basename(path: &str) -> &str {
    parts(path).pop().unwrap_or("")
}

/// The folder of a path or URI (a URI's query dropped; a local path keeps a `?` in its names).
pub fn parent_uri(uri: &str) -> &str {
    let base = without_query(uri);
    match base.trim_end_matches('/').rfind('/') {
        Some(at) => &base[..at],
        // Python's base[:-1]
        None => base.char_indices().last().map_or("", |(at, _)| &base[..at]),
    }
}

/// A folder a broker is deleting or moving: `<topic>-<partition>.<32 hex>-delete` (or `-future`, `-stray`).
pub fn is_transient_folder(name: &str) -> bool {
    let name = before_end(name);
    for kind in ["-delete", "-future", "-stray"] {
        if let Some(head) = name.strip_suffix(kind) {
            let bytes = head.as_bytes();
            if bytes.len() >= 33 {
                let (dot, hex) = bytes[bytes.len() - 33..].split_at(1);
                if dot == b"." && hex.iter().all(u8::is_ascii_hexdigit) {
                    return true;
                }
            }
        }
    }
    false
}

/// Whether a file name is a segment's: `.log` (Kafka renames segments it is about to delete
/// or swap in to `.log.deleted`/`.log.cleaned`/`.log.swap`).
pub fn is_segment_name(name: &str) -> bool {
    name.ends_with(".log")
}

/// The base offset in a segment or index file name (`00000000000000001234.log`,
/// `.index`, `12-<segment id>.log`...), `None` otherwise.
pub fn segment_base_offset(name: &str) -> Option<i64> {
    let digits = name.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &name[digits..];
    let fits = rest.starts_with('.')
        || rest.is_empty()
        || rest == "\n"
        || rest
            .strip_prefix('-')
            .is_some_and(|r| r.len() >= 23 && is_kafka_id(&r[..22]) && r.as_bytes()[22] == b'.');
    if fits {
        name[..digits].parse().ok()
    } else {
        None
    }
}

/// 22 characters of URL-safe base64: a Kafka `Uuid` as text.
pub(crate) fn is_kafka_id(text: &str) -> bool {
    text.len() == 22
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `("my-topic", 12)` for a folder named `my-topic-12`, else `None`.
pub fn topic_partition_of_folder(name: &str) -> Option<(String, i64)> {
    let name = before_end(name);
    let dash = name.rfind('-')?;
    let (topic, partition) = (&name[..dash], &name[dash + 1..]);
    if topic.is_empty() || topic.contains('\n') {
        return None;
    }
    Some((topic.to_string(), digits_value(partition)?))
}

/// The topic and partition of a folder's segments: the overrides, else the folder's name.
pub fn folder_topic_partition(
    folder: &str,
    topic: Option<&str>,
    partition: Option<i64>,
) -> Result<(String, i64), String> {
    if let (Some(t), Some(p)) = (topic, partition) {
        return Ok((t.to_string(), p));
    }
    match topic_partition_of_folder(basename(folder)) {
        Some((t, p)) => Ok((topic.map_or(t, str::to_string), partition.unwrap_or(p))),
        None => {
            let missing: Vec<&str> = [("topic", topic.is_none()), ("partition", partition.is_none())]
                .into_iter()
                .filter_map(|(n, m)| m.then_some(n))
                .collect();
            Err(text::not_topic_partition(folder, &missing.join(" and ")))
        }
    }
}

/// Python's `repr` of a string, as the package's messages quote paths (`'/data/x'`).
pub fn quote(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable` for the characters paths hold: controls, separators other
/// than the space, format characters and private use are not.
fn printable(c: char) -> bool {
    let n = c as u32;
    !(n < 0x20
        || (0x7f..=0xa0).contains(&n)
        || n == 0xad
        || n == 0x1680
        || (0x2000..=0x200f).contains(&n)
        || (0x2028..=0x202f).contains(&n)
        || (0x205f..=0x2064).contains(&n)
        || (0x2066..=0x206f).contains(&n)
        || n == 0x3000
        || n == 0xfeff
        || (0xe000..=0xf8ff).contains(&n)
        || (0xfff9..=0xfffb).contains(&n)
        || n >= 0xf0000)
}

/// What listing says to users (errors and warnings), in one place.
pub mod text {
    use super::{basename, quote};

    /// The suffix of an Aiven remote segment's manifest.
    pub const MANIFEST: &str = ".rsm-manifest";
    /// The suffix of the object holding an Aiven remote segment's indexes.
    pub const INDEXES: &str = ".indexes";

    pub fn not_topic_partition(folder: &str, missing: &str) -> String {
        format!(
            "folder {} is not named <topic>-<partition> (like 'orders-0'), so its segments have no {missing}; \
             rename it, or give the {missing} explicitly (keyword arguments topic=/partition=, Spark options \
             'topic'/'partition'). Tiered-storage segments are found by their own names instead: \
             {{topic}}-{{topicId}}/{{partition}}/{{offset}}-{{segmentId}}.log with its .rsm-manifest (Aiven), \
             {{topic}}-{{partition}}-{{topicId}}/{{offset}}-{{segmentId}}.log (Kafka's LocalTieredStorage)",
            quote(folder)
        )
    }

    pub fn no_match(pattern: &str) -> String {
        format!("no Kafka log files match {}", quote(pattern))
    }

    pub fn does_not_exist(path: &str) -> String {
        format!("Kafka log path does not exist: {}", quote(path))
    }

    pub fn cant_read_folder(path: &str) -> String {
        format!("can't read the folder {}", quote(path))
    }

    pub fn layout(partition_folder_hint: Option<&str>) -> String {
        let hint = partition_folder_hint
            .map(|folder| format!(" (the partition folder {} is not a number)", quote(folder)))
            .unwrap_or_default();
        format!(
            "named like a remote segment (<offset>-<segment id>.log) but its folders fit no known layout{hint}: \
             Aiven's tiered storage keeps {{topic}}-{{topicId}}/{{partition}}/ and Kafka's LocalTieredStorage \
             {{topic}}-{{partition}}-{{topicId}}/; give topic= and partition= to read it anyway"
        )
    }

    pub fn missing_object(manifest_path: &str) -> String {
        format!(
            "the segment's .log object is missing (its manifest {} is there)",
            basename(manifest_path)
        )
    }

    pub fn missing_manifest(manifest_path: &str) -> String {
        format!(
            "its manifest {} is missing (an upload in progress or abandoned?); the object is stored in chunks \
             (compressed or encrypted) that can't be read without it",
            basename(manifest_path)
        )
    }

    pub fn abandoned_upload(log_path: &str) -> String {
        format!("{log_path}: no {MANIFEST} beside it (an abandoned upload; another upload holds its offsets); left out")
    }

    pub fn upload_in_progress(log_path: &str) -> String {
        format!("{log_path}: no {MANIFEST} beside it (an upload in progress or abandoned); left out")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_the_python_patterns_read_them() {
        assert_eq!(topic_partition_of_folder("my-topic-12"), Some(("my-topic".into(), 12)));
        assert_eq!(topic_partition_of_folder("orders-3\n"), Some(("orders".into(), 3)));
        assert_eq!(topic_partition_of_folder("-3"), None);
        assert_eq!(topic_partition_of_folder("orders-x"), None);
        assert_eq!(segment_base_offset("00000000000000001234.timeindex"), Some(1234));
        assert_eq!(segment_base_offset("12-tqimKeZwStOEOwRzT3L5oQ.log"), Some(12));
        assert_eq!(segment_base_offset("12-short.log"), None);
        assert_eq!(segment_base_offset("notes.log"), None);
        assert!(is_transient_folder("orders-0.0123456789abcdef0123456789ABCDEF-delete"));
        assert!(!is_transient_folder("orders-0.0123456789abcdef-delete"));
        assert_eq!(basename("s3://b/p/orders-0/0.log?endpoint_override=x/y"), "0.log");
        assert_eq!(basename("C:\\data\\orders-0\\"), "orders-0");
        assert_eq!(parent_uri("s3://b/p/0.log?q=1"), "s3://b/p");
        assert_eq!(parent_uri("/data/a?b/0.log"), "/data/a?b");
        assert_eq!(parent_uri("abc"), "ab");
        assert_eq!(uri_scheme("s3a://x"), Some("s3a"));
        assert_eq!(uri_scheme("/x://y"), None);
    }

    #[test]
    fn quote_is_python_repr() {
        // Recorded from CPython 3.11: repr() of each.
        assert_eq!(quote("/data/x"), "'/data/x'");
        assert_eq!(quote("it's"), "\"it's\"");
        assert_eq!(quote("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(quote("tab\there\\"), "'tab\\there\\\\'");
        assert_eq!(quote("\u{7}é\u{a0}\u{200b}😀"), "'\\x07é\\xa0\\u200b😀'");
    }

    #[test]
    fn missing_names_in_the_error() {
        let e = folder_topic_partition("/x/backup", Some("t"), None).unwrap_err();
        assert!(e.starts_with("folder '/x/backup' is not named <topic>-<partition>"));
        assert!(e.contains("have no partition; rename it, or give the partition explicitly"));
        assert_eq!(
            folder_topic_partition("/x/backup", Some("t"), Some(4)).unwrap(),
            ("t".into(), 4)
        );
    }
}
