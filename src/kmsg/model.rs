//! The definition model: Kafka's message-definition JSON format (validVersions,
//! flexibleVersions, fields with versions, nullableVersions, taggedVersions,
//! tags and defaults, nested and common structs), and its loader.

use std::collections::HashMap;

use serde_json::Value;

/// The deepest nesting of structs a definition may have. Kafka's own records
/// nest at most four levels; the bound keeps the reader's recursion (which
/// follows the definitions, never the input) small.
pub const MAX_DEPTH: usize = 16;

/// A version range: `"3+"`, `"0-2"`, `"4"` or `"none"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub lo: i16,
    pub hi: i16,
}

impl Versions {
    pub const NONE: Versions = Versions { lo: 1, hi: 0 };
    pub const ALL: Versions = Versions { lo: 0, hi: i16::MAX };

    pub fn parse(text: &str) -> Result<Versions, String> {
        let t = text.trim();
        let num = |s: &str| {
            s.trim()
                .parse::<i16>()
                .map_err(|_| format!("bad version range {text:?}"))
        };
        if t == "none" || t.is_empty() {
            Ok(Versions::NONE)
        } else if let Some(lo) = t.strip_suffix('+') {
            Ok(Versions {
                lo: num(lo)?,
                hi: i16::MAX,
            })
        } else if let Some((lo, hi)) = t.split_once('-') {
            Ok(Versions {
                lo: num(lo)?,
                hi: num(hi)?,
            })
        } else {
            let v = num(t)?;
            Ok(Versions { lo: v, hi: v })
        }
    }

    pub fn contains(self, v: i16) -> bool {
        self.lo <= v && v <= self.hi
    }

    pub fn is_empty(self) -> bool {
        self.lo > self.hi
    }
}

impl std::fmt::Display for Versions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            write!(f, "none")
        } else if self.hi == i16::MAX {
            write!(f, "{}+", self.lo)
        } else if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

/// A primitive type of the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    Bool,
    Int8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Float64,
    String,
    Bytes,
    Uuid,
    Records,
}

impl Prim {
    fn parse(name: &str) -> Option<Prim> {
        Some(match name {
            "bool" => Prim::Bool,
            "int8" => Prim::Int8,
            "int16" => Prim::Int16,
            "uint16" => Prim::Uint16,
            "int32" => Prim::Int32,
            "uint32" => Prim::Uint32,
            "int64" => Prim::Int64,
            "float64" => Prim::Float64,
            "string" => Prim::String,
            "bytes" => Prim::Bytes,
            "uuid" => Prim::Uuid,
            "records" => Prim::Records,
            _ => return None,
        })
    }
}

/// A field's type: a primitive, a struct (by index in `Definitions::structs`),
/// or an array of either.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    Prim(Prim),
    Struct(usize),
    Array(Box<FieldType>),
}

#[derive(Debug, Clone)]
pub struct FieldDef {
    pub name: String,
    pub ty: FieldType,
    pub versions: Versions,
    pub nullable: Versions,
    pub tagged: Versions,
    pub tag: Option<u32>,
    /// The `default` as written (a number, `"true"`, a string, `"null"`).
    pub default: Option<String>,
}

impl FieldDef {
    /// Whether the field is sent as a tagged field in `version` (flexible).
    pub fn is_tagged_in(&self, version: i16) -> bool {
        self.tag.is_some() && self.tagged.contains(version)
    }
}

#[derive(Debug, Clone)]
pub struct StructDef {
    pub name: String,
    pub fields: Vec<FieldDef>,
}

/// One message (a record's key, value, or a metadata record).
#[derive(Debug, Clone)]
pub struct MessageDef {
    pub name: String,
    /// Kafka's `type` (`"data"`, `"metadata"`, `"coordinator-key"`, ...).
    pub kind: String,
    pub api_key: Option<i16>,
    pub valid: Versions,
    pub flexible: Versions,
    pub root: usize,
}

/// A set of message definitions with their structs.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    pub messages: Vec<MessageDef>,
    pub structs: Vec<StructDef>,
    by_name: HashMap<String, usize>,
}

/// Remove `//` comments outside of strings (Kafka's files carry them).
pub fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            out.push(c);
            if c == b'\\' && i + 1 < bytes.len() {
                out.push(bytes[i + 1]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_string = false;
            }
        } else if c == b'"' {
            in_string = true;
            out.push(c);
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        } else {
            out.push(c);
        }
        i += 1;
    }
    // Only whole ASCII bytes were removed, so the text stays UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

fn str_of<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

fn versions_of(obj: &Value, key: &str, what: &str) -> Result<Option<Versions>, String> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Versions::parse(s).map(Some).map_err(|e| format!("{what}: {key}: {e}")),
        Some(other) => Err(format!("{what}: {key} must be a string, not {other}")),
    }
}

fn default_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".into()),
        _ => None,
    }
}

impl Registry {
    pub fn message(&self, name: &str) -> Option<&MessageDef> {
        self.by_name.get(name).map(|&i| &self.messages[i])
    }

    pub fn message_index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Add (or replace, by name) one message from the text of a Kafka
    /// definition file. Returns its index.
    pub fn add_json(&mut self, text: &str) -> Result<usize, String> {
        let value: Value =
            serde_json::from_str(&strip_comments(text)).map_err(|e| format!("not a message definition: {e}"))?;
        let name = str_of(&value, "name")
            .ok_or("a message definition needs a \"name\"")?
            .to_string();
        let what = name.clone();
        let valid = versions_of(&value, "validVersions", &what)?.ok_or_else(|| format!("{what}: no validVersions"))?;
        let flexible = versions_of(&value, "flexibleVersions", &what)?.unwrap_or(Versions::NONE);
        let kind = str_of(&value, "type").unwrap_or("data").to_string();
        let api_key = match value.get("apiKey") {
            None => None,
            Some(v) => Some(
                v.as_i64()
                    .and_then(|k| i16::try_from(k).ok())
                    .ok_or_else(|| format!("{what}: bad apiKey {v}"))?,
            ),
        };
        // Structs of this message: common structs first (by name), then inline ones.
        let base = self.structs.len();
        let mut local: HashMap<String, usize> = HashMap::new();
        let mut pending: Vec<(usize, &Value)> = Vec::new();
        if let Some(commons) = value.get("commonStructs") {
            let commons = commons
                .as_array()
                .ok_or_else(|| format!("{what}: commonStructs must be a list"))?;
            for c in commons {
                let cname = str_of(c, "name").ok_or_else(|| format!("{what}: a common struct has no name"))?;
                let id = self.structs.len();
                self.structs.push(StructDef {
                    name: cname.to_string(),
                    fields: Vec::new(),
                });
                local.insert(cname.to_string(), id);
                pending.push((id, c));
            }
        }
        let root = self.structs.len();
        self.structs.push(StructDef {
            name: name.clone(),
            fields: Vec::new(),
        });
        pending.push((root, &value));
        // Parse struct bodies with a work list (inline structs add to it).
        let mut work = pending;
        let mut guard = 0usize;
        while let Some((id, obj)) = work.pop() {
            guard += 1;
            if guard > 10_000 {
                self.structs.truncate(base);
                return Err(format!("{what}: too many structs"));
            }
            let fields = match obj.get("fields") {
                None => Vec::new(),
                Some(Value::Array(list)) => list.iter().collect(),
                Some(_) => {
                    self.structs.truncate(base);
                    return Err(format!("{what}: fields must be a list"));
                }
            };
            if fields.len() > 128 {
                self.structs.truncate(base);
                return Err(format!("{what}: a struct has more than 128 fields"));
            }
            let mut parsed = Vec::with_capacity(fields.len());
            for f in fields {
                match self.parse_field(f, &what, &mut local, &mut work) {
                    Ok(field) => parsed.push(field),
                    Err(e) => {
                        self.structs.truncate(base);
                        return Err(e);
                    }
                }
            }
            self.structs[id].fields = parsed;
        }
        // Resolve the struct references left by name, then check nesting.
        if let Err(e) = self
            .resolve(base, &local, &what)
            .and_then(|_| self.check_depth(root, &what))
        {
            self.structs.truncate(base);
            return Err(e);
        }
        let message = MessageDef {
            name: name.clone(),
            kind,
            api_key,
            valid,
            flexible,
            root,
        };
        let index = match self.by_name.get(&name) {
            Some(&i) => {
                self.messages[i] = message;
                i
            }
            None => {
                self.messages.push(message);
                self.by_name.insert(name, self.messages.len() - 1);
                self.messages.len() - 1
            }
        };
        Ok(index)
    }

    fn parse_field<'v>(
        &mut self,
        f: &'v Value,
        what: &str,
        local: &mut HashMap<String, usize>,
        work: &mut Vec<(usize, &'v Value)>,
    ) -> Result<FieldDef, String> {
        let name = str_of(f, "name").ok_or_else(|| format!("{what}: a field has no name"))?;
        let where_ = format!("{what}.{name}");
        let ty_text = str_of(f, "type").ok_or_else(|| format!("{where_}: no type"))?;
        let nullable = versions_of(f, "nullableVersions", &where_)?.unwrap_or(Versions::NONE);
        let tagged = versions_of(f, "taggedVersions", &where_)?.unwrap_or(Versions::NONE);
        // Kafka's FieldSpec: without "versions", a tagged field's versions are its taggedVersions.
        let versions = match versions_of(f, "versions", &where_)? {
            Some(v) => v,
            None if !tagged.is_empty() => tagged,
            None => return Err(format!("{where_}: no versions")),
        };
        let tag = match f.get("tag") {
            None => None,
            Some(v) => Some(
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|t| t.trim().parse().ok()))
                    .and_then(|t| u32::try_from(t).ok())
                    .ok_or_else(|| format!("{where_}: bad tag {v}"))?,
            ),
        };
        let (is_array, elem) = match ty_text.strip_prefix("[]") {
            Some(e) => (true, e),
            None => (false, ty_text),
        };
        let elem_ty = match Prim::parse(elem) {
            Some(p) => FieldType::Prim(p),
            None => {
                if f.get("fields").is_some() {
                    let id = self.structs.len();
                    self.structs.push(StructDef {
                        name: elem.to_string(),
                        fields: Vec::new(),
                    });
                    local.insert(elem.to_string(), id);
                    work.push((id, f));
                    FieldType::Struct(id)
                } else {
                    // A common struct (or one defined elsewhere): resolved later.
                    FieldType::Struct(usize::MAX - self.name_slot(elem, local))
                }
            }
        };
        let ty = if is_array {
            FieldType::Array(Box::new(elem_ty))
        } else {
            elem_ty
        };
        Ok(FieldDef {
            name: name.to_string(),
            ty,
            versions,
            nullable,
            tagged,
            tag,
            default: f.get("default").and_then(default_text),
        })
    }

    /// Unresolved names are parked in `local` under a marker key.
    fn name_slot(&mut self, elem: &str, local: &mut HashMap<String, usize>) -> usize {
        let key = format!("\u{0}{elem}");
        let n = local.len();
        *local.entry(key).or_insert(n)
    }

    fn resolve(&mut self, base: usize, local: &HashMap<String, usize>, what: &str) -> Result<(), String> {
        let unresolved: HashMap<usize, &str> = local
            .iter()
            .filter_map(|(k, &v)| k.strip_prefix('\u{0}').map(|name| (v, name)))
            .collect();
        for id in base..self.structs.len() {
            for fi in 0..self.structs[id].fields.len() {
                let slot = match struct_of(&self.structs[id].fields[fi].ty) {
                    Some(s) if s >= usize::MAX / 2 => usize::MAX - s,
                    _ => continue,
                };
                let name = unresolved.get(&slot).copied().unwrap_or("?");
                let target = *local.get(name).ok_or_else(|| {
                    format!(
                        "{what}: unknown type {name:?} of field {}",
                        self.structs[id].fields[fi].name
                    )
                })?;
                match &mut self.structs[id].fields[fi].ty {
                    FieldType::Struct(s) => *s = target,
                    FieldType::Array(inner) => **inner = FieldType::Struct(target),
                    FieldType::Prim(_) => {}
                }
            }
        }
        Ok(())
    }

    /// Refuse struct cycles and nesting deeper than [`MAX_DEPTH`] (work list, no recursion).
    fn check_depth(&self, root: usize, what: &str) -> Result<(), String> {
        let mut work = vec![(root, 1usize)];
        while let Some((id, depth)) = work.pop() {
            if depth > MAX_DEPTH {
                return Err(format!(
                    "{what}: structs nest deeper than {MAX_DEPTH} levels (or refer to themselves)"
                ));
            }
            for f in &self.structs[id].fields {
                if let Some(s) = struct_of(&f.ty) {
                    work.push((s, depth + 1));
                }
            }
        }
        Ok(())
    }
}

/// The struct a field holds (directly or as array elements).
pub fn struct_of(ty: &FieldType) -> Option<usize> {
    match ty {
        FieldType::Struct(s) => Some(*s),
        FieldType::Array(inner) => match **inner {
            FieldType::Struct(s) => Some(s),
            _ => None,
        },
        FieldType::Prim(_) => None,
    }
}
