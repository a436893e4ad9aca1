//! A small, cached Confluent Schema Registry client (REST API, read-only):
//! what reading Confluent-framed values needs — a schema by id (with its
//! references), a subject's versions and latest version, the subjects.
//!
//! The same questions, answers and error texts as the Python package's
//! `kafkabatch.values.registry.SchemaRegistry`. Answers that can't change (a
//! schema by id, a numbered version) are kept for the life of the process;
//! lists and `latest` are asked each time. One client per URL and
//! credentials in a process ([`SchemaRegistry::shared`]), so each schema id is
//! fetched once however many reads name the registry.
//!
//! HTTP goes through the `reqwest` client the crate already has for remote
//! storage (feature `remote`, TLS by rustls with ring), blocking on the
//! process's I/O runtime: no second HTTP stack. Without the feature a registry
//! URL is refused, naming the feature.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// confluent-kafka's `SchemaRegistryClient` configuration names honoured
/// (`schemaRegistry.basic.auth.user.info` in Spark's options).
pub const BASIC_AUTH: &str = "basic.auth.user.info";
/// The bearer token's configuration name.
pub const BEARER_TOKEN: &str = "bearer.auth.token";

/// How long one request may take.
#[cfg(feature = "remote")]
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The registry could not be reached or refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryError {
    pub message: String,
    /// The HTTP status the registry answered, when it answered.
    pub status: Option<u16>,
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RegistryError {}

/// A schema reference: the name the schema imports it by, its subject and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub name: String,
    pub subject: String,
    pub version: i64,
}

/// A registered schema: its text and references.
pub type Entry = (String, Vec<Reference>);

/// Read schemas from a Confluent Schema Registry over HTTP(S).
#[derive(Debug)]
pub struct SchemaRegistry {
    /// `scheme://host[:port][/path]`, credentials removed.
    pub url: String,
    authorization: Option<String>,
    cache: Mutex<HashMap<String, Value>>,
}

/// The clients of this process by URL and credentials.
type Clients = HashMap<(String, Option<String>, Option<String>), Arc<SchemaRegistry>>;
static CLIENTS: Mutex<Option<Clients>> = Mutex::new(None);

/// `text` with `%XX` escapes decoded (user names and passwords in a URL).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A path segment with everything but unreserved characters escaped (Python's `quote(s, safe="")`).
fn quoted(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~".contains(&b) {
            out.push(b as char);
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}

fn quote_py(text: &str) -> String {
    crate::scan::naming::quote(text)
}

impl SchemaRegistry {
    /// A client of `url` (`http(s)://host[:port][/path]`, optionally with
    /// `user:password@` for basic auth); `basic_auth` (`user:password`) and
    /// `bearer_token` set the `Authorization` header instead.
    pub fn new(url: &str, basic_auth: Option<&str>, bearer_token: Option<&str>) -> Result<Self, String> {
        let bad = || {
            format!(
                "schema registry URL must be http(s)://host[:port], not {}",
                quote_py(url)
            )
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(bad());
        }
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, ""),
        };
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((user, host)) => (Some(user), host),
            None => (None, authority),
        };
        if host.is_empty() || host.starts_with(':') {
            return Err(bad());
        }
        let from_url = userinfo.map(|u| match u.split_once(':') {
            Some((user, password)) => format!("{}:{}", percent_decoded(user), percent_decoded(password)),
            None => format!("{}:", percent_decoded(u)),
        });
        let basic = basic_auth.map(str::to_string).or(from_url);
        let authorization = match (basic, bearer_token) {
            (Some(basic), _) => {
                use base64::Engine;
                Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(basic.as_bytes())
                ))
            }
            (None, Some(token)) => Some(format!("Bearer {token}")),
            (None, None) => None,
        };
        Ok(SchemaRegistry {
            url: format!("{scheme}://{}{}", host.to_ascii_lowercase(), path.trim_end_matches('/')),
            authorization,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The process's client of `url` with these credentials (made on first use).
    pub fn shared(url: &str, basic_auth: Option<&str>, bearer_token: Option<&str>) -> Result<Arc<Self>, String> {
        let key = (
            url.to_string(),
            basic_auth.map(str::to_string),
            bearer_token.map(str::to_string),
        );
        let mut clients = CLIENTS.lock().unwrap_or_else(|p| p.into_inner());
        let clients = clients.get_or_insert_with(HashMap::new);
        if let Some(client) = clients.get(&key) {
            return Ok(Arc::clone(client));
        }
        let client = Arc::new(SchemaRegistry::new(url, basic_auth, bearer_token)?);
        clients.insert(key, Arc::clone(&client));
        Ok(client)
    }

    /// GET `path` as JSON; answers kept when `cache`.
    fn get(&self, path: &str, cache: bool) -> Result<Value, RegistryError> {
        if cache {
            if let Some(answer) = self.cache.lock().unwrap_or_else(|p| p.into_inner()).get(path) {
                return Ok(answer.clone());
            }
        }
        let answer = self.fetch(path)?;
        if cache {
            self.cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(path.to_string(), answer.clone());
        }
        Ok(answer)
    }

    fn unreachable(&self, reason: impl fmt::Display) -> RegistryError {
        RegistryError {
            message: format!("schema registry {} cannot be reached: {reason}", self.url),
            status: None,
        }
    }

    #[cfg(feature = "remote")]
    fn fetch(&self, path: &str) -> Result<Value, RegistryError> {
        let runtime = crate::storage::object::runtime().map_err(|e| self.unreachable(e))?;
        let url = format!("{}{path}", self.url);
        let authorization = self.authorization.clone();
        let (status, body) = runtime
            .block_on(async move {
                let client = reqwest::Client::builder().timeout(TIMEOUT).build()?;
                let mut request = client
                    .get(url)
                    .header("Accept", "application/vnd.schemaregistry.v1+json, application/json");
                if let Some(value) = authorization {
                    request = request.header("Authorization", value);
                }
                let response = request.send().await?;
                let status = response.status().as_u16();
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, body))
            })
            .map_err(|e| self.unreachable(error_chain(&e)))?;
        if !(200..300).contains(&status) {
            let detail = String::from_utf8_lossy(&body);
            let detail: String = detail.chars().take(200).collect();
            return Err(RegistryError {
                message: format!("schema registry {}: GET {path} answered {status}: {detail}", self.url),
                status: Some(status),
            });
        }
        serde_json::from_slice(&body).map_err(|e| RegistryError {
            message: format!("schema registry {}: GET {path} answered with no JSON: {e}", self.url),
            status: Some(status),
        })
    }

    #[cfg(not(feature = "remote"))]
    fn fetch(&self, _path: &str) -> Result<Value, RegistryError> {
        let _ = &self.authorization;
        Err(self.unreachable("this build of kafkabatch has no HTTP client (feature \"remote\")"))
    }

    /// Fails unless the registry answers.
    pub fn check(&self) -> Result<(), RegistryError> {
        self.get("/subjects", false).map(drop)
    }

    fn malformed(&self, path: &str, what: &str) -> RegistryError {
        RegistryError {
            message: format!("schema registry {}: GET {path} answered without {what}", self.url),
            status: None,
        }
    }

    fn string(&self, answer: &Value, path: &str, key: &str) -> Result<String, RegistryError> {
        answer
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| self.malformed(path, key))
    }

    fn int(&self, answer: &Value, path: &str, key: &str) -> Result<i64, RegistryError> {
        answer
            .get(key)
            .and_then(Value::as_i64)
            .ok_or_else(|| self.malformed(path, key))
    }

    /// The schema registered under `id`, as text.
    pub fn schema(&self, id: u32) -> Result<String, RegistryError> {
        Ok(self.schema_entry(id)?.0)
    }

    /// The schema registered under `id` and its references.
    pub fn schema_entry(&self, id: u32) -> Result<Entry, RegistryError> {
        let path = format!("/schemas/ids/{id}");
        let answer = self.get(&path, true)?;
        Ok((self.string(&answer, &path, "schema")?, self.references(&answer, &path)?))
    }

    fn references(&self, answer: &Value, path: &str) -> Result<Vec<Reference>, RegistryError> {
        let mut out = Vec::new();
        for r in answer.get("references").and_then(Value::as_array).into_iter().flatten() {
            out.push(Reference {
                name: self.string(r, path, "references' name")?,
                subject: self.string(r, path, "references' subject")?,
                version: self.int(r, path, "references' version")?,
            });
        }
        Ok(out)
    }

    /// Every subject.
    pub fn subjects(&self) -> Result<Vec<String>, RegistryError> {
        let answer = self.get("/subjects", false)?;
        Ok(answer
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect())
    }

    fn versions(&self, subject: &str) -> Result<Vec<i64>, RegistryError> {
        let answer = self.get(&format!("/subjects/{}/versions", quoted(subject)), false)?;
        Ok(answer
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_i64)
            .collect())
    }

    /// `(id, schema, references)` of one version of `subject`.
    pub fn version_entry(&self, subject: &str, version: i64) -> Result<(u32, String, Vec<Reference>), RegistryError> {
        let path = format!("/subjects/{}/versions/{version}", quoted(subject));
        let answer = self.get(&path, true)?;
        Ok((
            self.id(&answer, &path)?,
            self.string(&answer, &path, "schema")?,
            self.references(&answer, &path)?,
        ))
    }

    fn id(&self, answer: &Value, path: &str) -> Result<u32, RegistryError> {
        u32::try_from(self.int(answer, path, "id")?).map_err(|_| self.malformed(path, "an id of 32 bits"))
    }

    /// `(id, schema)` of every version of `subject`, oldest first.
    pub fn subject_schemas(&self, subject: &str) -> Result<Vec<(u32, String)>, RegistryError> {
        Ok(self
            .subject_entries(subject)?
            .into_iter()
            .map(|(id, schema, _)| (id, schema))
            .collect())
    }

    /// `(id, schema, references)` of every version of `subject`, oldest first.
    pub fn subject_entries(&self, subject: &str) -> Result<Vec<(u32, String, Vec<Reference>)>, RegistryError> {
        self.versions(subject)?
            .into_iter()
            .map(|v| self.version_entry(subject, v))
            .collect()
    }

    /// `(id, schema)` of the newest version of `subject`.
    pub fn latest(&self, subject: &str) -> Result<(u32, String), RegistryError> {
        let path = format!("/subjects/{}/versions/latest", quoted(subject));
        let answer = self.get(&path, false)?;
        Ok((self.id(&answer, &path)?, self.string(&answer, &path, "schema")?))
    }
}

/// An error and its sources, as one line (reqwest's own text is only the outermost).
#[cfg(feature = "remote")]
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let more = e.to_string();
        if !text.contains(&more) {
            text += &format!(": {more}");
        }
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_credentials_taken_out() {
        let r = SchemaRegistry::new("http://bob:p%40ss@Registry:8081/sr/", None, None).unwrap();
        assert_eq!(r.url, "http://registry:8081/sr");
        assert_eq!(r.authorization.as_deref(), Some("Basic Ym9iOnBAc3M="));
        let r = SchemaRegistry::new("https://h", None, Some("t0k3n")).unwrap();
        assert_eq!(r.authorization.as_deref(), Some("Bearer t0k3n"));
        let r = SchemaRegistry::new("https://u:p@h", Some("bob:pw"), Some("t")).unwrap();
        assert_eq!(r.authorization.as_deref(), Some("Basic Ym9iOnB3"));
        for bad in ["registry:8081", "ftp://h", "http://", "http://:80"] {
            let e = SchemaRegistry::new(bad, None, None).unwrap_err();
            assert!(
                e.starts_with("schema registry URL must be http(s)://host[:port], not '"),
                "{e}"
            );
        }
        assert_eq!(quoted("a b/c-value"), "a%20b%2Fc-value");
    }

    #[cfg(feature = "remote")]
    #[test]
    fn an_unreachable_registry_says_so() {
        let r = SchemaRegistry::new("http://127.0.0.1:9", None, None).unwrap();
        let e = r.check().unwrap_err();
        assert!(
            e.message
                .starts_with("schema registry http://127.0.0.1:9 cannot be reached: "),
            "{e}"
        );
        assert_eq!(e.status, None);
    }
}
