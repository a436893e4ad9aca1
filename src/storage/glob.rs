//! Globs as Python spells them: `fnmatch.fnmatchcase` for one name
//! (`*`, `?`, `[...]`, `[!...]`; `*` crosses `/`), and `glob.glob(recursive=True)`
//! over local folders (one pattern per path component, `**` for any number of
//! folders, names starting with `.` matched only by patterns starting with `.`).
//!
//! Users write the same patterns for local folders, object-store prefixes and
//! Spark paths, so the rules are Python's, not a shell's: `[!a]` negates,
//! `[^a]` is the two characters `^` and `a`, a `[` without its `]` is itself,
//! an empty range (`[z-a]`) matches nothing.
//!
//! ```
//! use kafkabatch::storage::glob::Pattern;
//! let p = Pattern::new("0000*[0-9].log");
//! assert!(p.matches("00001.log"));
//! assert!(!p.matches("0000x.log"));
//! ```

use std::fs;
use std::path::PathBuf;

/// Whether `text` holds a glob character (`*`, `?` or `[`), as Python's `glob.has_magic`.
pub fn has_magic(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// One character, itself.
    Literal(char),
    /// `?`: any one character.
    Any,
    /// `*`: any run of characters.
    Star,
    /// `[...]` / `[!...]`: one character in (or out of) the set.
    Set { negated: bool, ranges: Vec<(char, char)> },
    /// A set that can match nothing (`[z-a]`).
    Never,
}

/// One `fnmatch` pattern, compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    tokens: Vec<Token>,
}

impl Pattern {
    /// Compile `pattern` as `fnmatch.translate` does.
    pub fn new(pattern: &str) -> Self {
        let pat: Vec<char> = pattern.chars().collect();
        let n = pat.len();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < n {
            let c = pat[i];
            i += 1;
            match c {
                '*' => {
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                }
                '?' => tokens.push(Token::Any),
                '[' => {
                    let mut j = i;
                    if j < n && pat[j] == '!' {
                        j += 1;
                    }
                    if j < n && pat[j] == ']' {
                        j += 1;
                    }
                    while j < n && pat[j] != ']' {
                        j += 1;
                    }
                    if j >= n {
                        tokens.push(Token::Literal('['));
                    } else {
                        tokens.push(bracket(&pat, i, j));
                        i = j + 1;
                    }
                }
                other => tokens.push(Token::Literal(other)),
            }
        }
        Pattern { tokens }
    }

    /// Whether the whole of `name` matches (case-sensitive, as `fnmatchcase`).
    pub fn matches(&self, name: &str) -> bool {
        let text: Vec<char> = name.chars().collect();
        let tokens = &self.tokens;
        let (mut t, mut p) = (0usize, 0usize);
        // Where to go on after the last `*`: (token after it, text position it took up to).
        let mut restart: Option<(usize, usize)> = None;
        while t < text.len() {
            if p < tokens.len() {
                match &tokens[p] {
                    Token::Star => {
                        restart = Some((p + 1, t));
                        p += 1;
                        continue;
                    }
                    token if one(token, text[t]) => {
                        p += 1;
                        t += 1;
                        continue;
                    }
                    _ => {}
                }
            }
            match restart {
                Some((after, taken)) => {
                    p = after;
                    t = taken + 1;
                    restart = Some((after, taken + 1));
                }
                None => return false,
            }
        }
        tokens[p..].iter().all(|token| *token == Token::Star)
    }
}

/// Whether one non-`*` token takes the character `c`.
fn one(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::Any => true,
        Token::Set { negated, ranges } => ranges.iter().any(|(lo, hi)| *lo <= c && c <= *hi) != *negated,
        Token::Never | Token::Star => false,
    }
}

/// `pat[i..j]` is the inside of a `[...]` (j at its `]`): the set `fnmatch.translate`
/// writes for it, then read back as Python's `re` reads a character class.
fn bracket(pat: &[char], start: usize, j: usize) -> Token {
    let stuff: Vec<char> = pat[start..j].to_vec();
    // The class body as translate writes it: (character, escaped) pairs.
    let mut body: Vec<(char, bool)> = Vec::new();
    let escape = |s: &[char], dashes: bool, out: &mut Vec<(char, bool)>| {
        for &c in s {
            let escaped = c == '\\' || (dashes && c == '-') || matches!(c, '&' | '~' | '|');
            out.push((c, escaped));
        }
    };
    if !stuff.contains(&'-') {
        escape(&stuff, false, &mut body);
    } else {
        let mut chunks: Vec<Vec<char>> = Vec::new();
        let mut i = start;
        let mut k = if pat[i] == '!' { i + 2 } else { i + 1 };
        loop {
            let found = if k < j {
                pat[k..j].iter().position(|&c| c == '-').map(|at| k + at)
            } else {
                None
            };
            let Some(dash) = found else { break };
            chunks.push(pat[i..dash].to_vec());
            i = dash + 1;
            k = dash + 3;
        }
        let chunk = pat[i..j].to_vec();
        if !chunk.is_empty() {
            chunks.push(chunk);
        } else if let Some(last) = chunks.last_mut() {
            last.push('-');
        }
        // Remove empty ranges (invalid in a regular expression).
        let mut k = chunks.len().saturating_sub(1);
        while k > 0 {
            let (lo, hi) = (chunks[k - 1].last().copied(), chunks[k].first().copied());
            if let (Some(lo), Some(hi)) = (lo, hi) {
                if lo > hi {
                    let next = chunks.remove(k);
                    let prev = &mut chunks[k - 1];
                    prev.pop();
                    prev.extend_from_slice(&next[1..]);
                }
            }
            k -= 1;
        }
        for (n, chunk) in chunks.iter().enumerate() {
            if n > 0 {
                body.push(('-', false)); // a range
            }
            escape(chunk, true, &mut body);
        }
    }
    if body.is_empty() {
        return Token::Never;
    }
    if body == [('!', false)] {
        return Token::Any;
    }
    let negated = body[0] == ('!', false);
    let body = if negated { &body[1..] } else { &body[..] };
    // Read the class as `re` does: `x-y` is a range, a `-` first or last is itself.
    let mut ranges = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let lo = body[at].0;
        if at + 2 < body.len() && body[at + 1] == ('-', false) {
            let hi = body[at + 2].0;
            if lo <= hi {
                ranges.push((lo, hi));
            }
            at += 3;
        } else {
            ranges.push((lo, lo));
            at += 1;
        }
    }
    Token::Set { negated, ranges }
}

// --------------------------------------------------------------------------
// glob.glob(pathname, recursive=True) over local folders
// --------------------------------------------------------------------------

/// `os.path.split`: (head without its trailing `/`s unless all `/`, tail).
pub(crate) fn split(path: &str) -> (&str, &str) {
    let at = path.rfind('/').map_or(0, |i| i + 1);
    let (head, tail) = path.split_at(at);
    if !head.is_empty() && !head.chars().all(|c| c == '/') {
        (head.trim_end_matches('/'), tail)
    } else {
        (head, tail)
    }
}

/// `os.path.join(a, b)` for two parts.
pub(crate) fn join(a: &str, b: &str) -> String {
    if b.starts_with('/') || a.is_empty() {
        b.to_string()
    } else if a.ends_with('/') {
        format!("{a}{b}")
    } else {
        format!("{a}/{b}")
    }
}

/// glob's `_join`: either part alone when the other is empty.
fn join_nonempty(a: &str, b: &str) -> String {
    if a.is_empty() || b.is_empty() {
        format!("{a}{b}")
    } else {
        join(a, b)
    }
}

fn is_hidden(name: &str) -> bool {
    name.starts_with('.')
}

fn lexists(path: &str) -> bool {
    fs::symlink_metadata(if path.is_empty() { "." } else { path }).is_ok() && !path.is_empty()
}

fn is_dir(path: &str) -> bool {
    fs::metadata(if path.is_empty() { "." } else { path }).is_ok_and(|m| m.is_dir())
}

/// Whether a folder entry is a folder, through links, as Python's `DirEntry.is_dir()`: the
/// entry's own type unless it is a link (no stat per file); errors count as "not a folder".
pub(crate) fn entry_is_dir(entry: &fs::DirEntry) -> bool {
    match entry.file_type() {
        Ok(t) if t.is_symlink() => fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()),
        Ok(t) => t.is_dir(),
        Err(_) => false,
    }
}

/// The names in folder `dir` (`""` = the working folder) and whether each is a folder
/// (through links, as `DirEntry.is_dir()`: no stat unless the entry is a link); only
/// folders when `dir_only`. A folder that can't be read has none, as for Python. Names
/// that aren't UTF-8 are left out.
fn list_dir(dir: &str, dir_only: bool) -> Vec<(String, bool)> {
    let Ok(entries) = fs::read_dir(if dir.is_empty() { "." } else { dir }) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let is_dir = entry_is_dir(&entry);
        if !dir_only || is_dir {
            names.push((name, is_dir));
        }
    }
    names
}

/// `_glob2`: `""` then every name under `dir` at any depth (not through hidden names).
/// An explicit stack, and a folder reached again through a symbolic link is not
/// descended into twice on one path (Python goes on until the OS refuses the path).
fn glob_recursive(dir: &str, dir_only: bool) -> Vec<String> {
    let mut out = vec![String::new()];
    // (relative name, whether a folder, real paths of the folders on the way to it)
    let mut stack: Vec<(String, bool, Vec<PathBuf>)> = Vec::new();
    let root_real = fs::canonicalize(if dir.is_empty() { "." } else { dir }).ok();
    let push_children = |stack: &mut Vec<(String, bool, Vec<PathBuf>)>, rel: &str, chain: &[PathBuf]| {
        let here = join_nonempty(dir, rel);
        let mut names = list_dir(&here, dir_only);
        names.retain(|(n, _)| !is_hidden(n));
        for (name, is_dir) in names.into_iter().rev() {
            stack.push((join_nonempty(rel, &name), is_dir, chain.to_vec()));
        }
    };
    let start: Vec<PathBuf> = root_real.into_iter().collect();
    push_children(&mut stack, "", &start);
    while let Some((rel, is_dir, mut chain)) = stack.pop() {
        out.push(rel.clone());
        if !is_dir {
            continue;
        }
        if let Ok(real) = fs::canonicalize(join_nonempty(dir, &rel)) {
            if chain.contains(&real) {
                continue; // a symbolic link back up: its names are already listed
            }
            chain.push(real);
        }
        push_children(&mut stack, &rel, &chain);
    }
    out
}

/// The names in `dir` that `pattern` (one path component) matches.
fn glob_in_dir(dir: &str, pattern: &str, dir_only: bool) -> Vec<String> {
    if !has_magic(pattern) {
        // _glob0
        let found = if pattern.is_empty() {
            is_dir(dir)
        } else {
            lexists(&join_nonempty(dir, pattern))
        };
        return if found { vec![pattern.to_string()] } else { Vec::new() };
    }
    if pattern == "**" {
        return glob_recursive(dir, dir_only);
    }
    let compiled = Pattern::new(pattern);
    let hidden_too = is_hidden(pattern);
    list_dir(dir, dir_only)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|n| (hidden_too || !is_hidden(n)) && compiled.matches(n))
        .collect()
}

/// The paths `glob.glob(pattern, recursive=True)` returns, sorted (duplicates kept, as there).
pub fn glob(pattern: &str) -> Vec<String> {
    if !has_magic(pattern) {
        let (dir, base) = split(pattern);
        let found = if base.is_empty() { is_dir(dir) } else { lexists(pattern) };
        return if found { vec![pattern.to_string()] } else { Vec::new() };
    }
    // Peel components off the end while the folder part still has glob characters.
    let mut levels: Vec<&str> = Vec::new(); // basenames, the whole pattern's first
    let mut rest = pattern;
    let mut results: Vec<String>;
    loop {
        let (dir, base) = split(rest);
        let dir_only = !levels.is_empty();
        levels.push(base);
        if dir.is_empty() {
            results = glob_in_dir("", base, dir_only);
            break;
        }
        if dir != rest && has_magic(dir) {
            rest = dir;
            continue;
        }
        results = glob_in_dir(dir, base, dir_only)
            .into_iter()
            .map(|name| join(dir, &name))
            .collect();
        break;
    }
    levels.pop();
    while let Some(base) = levels.pop() {
        let dir_only = !levels.is_empty();
        let mut next = Vec::new();
        for dir in &results {
            next.extend(
                glob_in_dir(dir, base, dir_only)
                    .into_iter()
                    .map(|name| join(dir, &name)),
            );
        }
        results = next;
    }
    if pattern.starts_with("**") {
        if let Some(at) = results.iter().position(String::is_empty) {
            results.remove(at);
        }
    }
    results.sort();
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(pattern, name, fnmatch.fnmatchcase(name, pattern))`, recorded from CPython 3.11.7 by
    /// `scripts/record_glob_cases.py`.
    const FNMATCH_CASES: &[(&str, &str, bool)] = include!("glob_fnmatch_cases.in");

    #[test]
    fn fnmatch_agrees_with_python() {
        let mut wrong = Vec::new();
        for (pattern, name, expected) in FNMATCH_CASES {
            if Pattern::new(pattern).matches(name) != *expected {
                wrong.push((pattern, name, expected));
            }
        }
        assert!(
            wrong.is_empty(),
            "{} of {} differ: {wrong:?}",
            wrong.len(),
            FNMATCH_CASES.len()
        );
    }

    /// The tree `scripts/record_glob_cases.py` builds (folders end with `/`).
    const TREE: &[&str] = include!("glob_tree.in");
    /// `(pattern relative to the tree, sorted glob.glob(root + pattern, recursive=True) relative to it)`.
    const GLOB_CASES: &[(&str, &[&str])] = include!("glob_glob_cases.in");

    #[test]
    fn glob_agrees_with_python() {
        let root = std::env::temp_dir().join(format!("kafkabatch-glob-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for entry in TREE {
            let path = root.join(entry.trim_end_matches('/'));
            if entry.ends_with('/') {
                fs::create_dir_all(&path).unwrap();
            } else {
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, b"x").unwrap();
            }
        }
        let prefix = format!("{}/", root.to_str().unwrap());
        let mut wrong = Vec::new();
        for (pattern, expected) in GLOB_CASES {
            let got: Vec<String> = glob(&format!("{prefix}{pattern}"))
                .into_iter()
                .map(|p| p.strip_prefix(&prefix).map(str::to_string).unwrap_or(p))
                .collect();
            if got != *expected {
                wrong.push((pattern, got, expected));
            }
        }
        fs::remove_dir_all(&root).unwrap();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn split_and_join_are_posixpaths() {
        assert_eq!(split("/a/b//c"), ("/a/b", "c"));
        assert_eq!(split("//x"), ("//", "x"));
        assert_eq!(split("x"), ("", "x"));
        assert_eq!(join("a", ""), "a/");
        assert_eq!(join("a/", "b"), "a/b");
        assert_eq!(join("a", "/b"), "/b");
    }
}
