//! URIs to storages: which schemes the object stores serve, how their
//! options are given, and one store per bucket and options, made once.
//!
//! Served: `s3://` (also Hadoop's `s3a://` and `s3n://`), `gs://`,
//! `abfs://`/`abfss://`/`az://`/`adl://`/`azure://`, `http://` and `https://`.
//! Credentials and endpoints come from the environment as object_store reads it
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_REGION`/`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL`, `GOOGLE_*`,
//! `AZURE_*`...), then from options (object_store's configuration keys, e.g.
//! `aws_endpoint`, `aws_region`, `allow_http`), then from the URI's query in
//! pyarrow's words (`?endpoint_override=host:port&scheme=http&region=...`).
//! An endpoint given as `http://...` allows plain HTTP by itself.
//!
//! ```no_run
//! use std::collections::HashMap;
//! use kafkabatch::storage::uri::resolve;
//!
//! let options = HashMap::from([("aws_endpoint".to_string(), "http://127.0.0.1:9000".to_string())]);
//! let (storage, prefix) = resolve("s3://bucket/kafka/orders-0/", &options).unwrap().expect("s3 is served");
//! for entry in storage.list(&prefix, true).unwrap() {
//!     println!("{} {}", entry.location, entry.size);
//! }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::{ClientConfigKey, ObjectStore};

use super::object::{runtime, ObjectStorage};
use super::{Location, Storage, StorageError};

/// A URI cut in its parts: `scheme://authority/key?query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitUri<'a> {
    /// As written (`s3a`).
    pub scheme: &'a str,
    /// The bucket, container or host (with port).
    pub authority: &'a str,
    /// The key below the authority, without its leading `/` (may be empty).
    pub key: &'a str,
    /// The text after `?`, if any.
    pub query: Option<&'a str>,
}

impl SplitUri<'_> {
    /// The scheme as the stores know it: lower case, `s3a`/`s3n` as `s3`.
    pub fn canonical_scheme(&self) -> String {
        canonical_scheme(self.scheme)
    }
}

/// `s3a`/`s3n` (Hadoop's spellings) as `s3`, every scheme in lower case.
pub fn canonical_scheme(scheme: &str) -> String {
    let lower = scheme.to_ascii_lowercase();
    match lower.as_str() {
        "s3a" | "s3n" => "s3".to_string(),
        _ => lower,
    }
}

/// `text` cut as a URI (`scheme://authority/key?query`), or `None` when it is no URI (a local path).
pub fn split_uri(text: &str) -> Option<SplitUri<'_>> {
    let (scheme, rest) = text.split_once("://")?;
    let mut chars = scheme.chars();
    if !chars.next()?.is_ascii_alphabetic() || !chars.all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c)) {
        return None;
    }
    let (base, query) = match rest.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (rest, None),
    };
    let (authority, key) = base.split_once('/').unwrap_or((base, ""));
    Some(SplitUri {
        scheme,
        authority,
        key,
        query,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    S3,
    Gcs,
    Azure,
    Http,
}

fn kind_of(scheme: &str) -> Option<Kind> {
    match scheme {
        "s3" => Some(Kind::S3),
        "gs" => Some(Kind::Gcs),
        "az" | "adl" | "azure" | "abfs" | "abfss" => Some(Kind::Azure),
        "http" | "https" => Some(Kind::Http),
        _ => None,
    }
}

/// Whether the object stores serve `text`'s scheme (a local path or `file:` URI: no).
pub fn serves(text: &str) -> bool {
    split_uri(text).is_some_and(|split| kind_of(&split.canonical_scheme()).is_some() && !split.authority.is_empty())
}

/// pyarrow's URI query keys that map onto object_store's S3 configuration.
const QUERY_KEYS: &[&str] = &[
    "endpoint_override",
    "scheme",
    "region",
    "access_key",
    "secret_key",
    "session_token",
    "anonymous",
    "force_virtual_addressing",
];

/// S3 settings from a URI's query in pyarrow's words, or `None` when a key is
/// not one of [`QUERY_KEYS`] (pyarrow reads the URI then, as it always did).
fn s3_query_options(query: &str) -> Option<Vec<(AmazonS3ConfigKey, String)>> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    if pairs.iter().any(|(k, _)| !QUERY_KEYS.contains(&k.as_str())) {
        return None;
    }
    let get = |name: &str| pairs.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let mut out = Vec::new();
    if let Some(endpoint) = get("endpoint_override") {
        let endpoint = if endpoint.contains("://") {
            endpoint
        } else {
            format!("{}://{endpoint}", get("scheme").unwrap_or_else(|| "https".into()))
        };
        out.push((AmazonS3ConfigKey::Endpoint, endpoint));
    }
    for (name, key) in [
        ("region", AmazonS3ConfigKey::Region),
        ("access_key", AmazonS3ConfigKey::AccessKeyId),
        ("secret_key", AmazonS3ConfigKey::SecretAccessKey),
        ("session_token", AmazonS3ConfigKey::Token),
        ("anonymous", AmazonS3ConfigKey::SkipSignature),
        ("force_virtual_addressing", AmazonS3ConfigKey::VirtualHostedStyleRequest),
    ] {
        if let Some(value) = get(name) {
            out.push((key, value));
        }
    }
    Some(out)
}

/// Whether any store kind knows `key` (one options map may serve several schemes).
fn known_anywhere(key: &str) -> bool {
    AmazonS3ConfigKey::from_str(key).is_ok()
        || GoogleConfigKey::from_str(key).is_ok()
        || AzureConfigKey::from_str(key).is_ok()
        || ClientConfigKey::from_str(key).is_ok()
}

/// The option `key` in object_store's words for a store of `kind`, `Ok(None)` for
/// another kind's key, an error for a key none knows.
fn option_for<K: FromStr>(key: &str, location: &Location) -> Result<Option<K>, StorageError> {
    match K::from_str(key) {
        Ok(k) => Ok(Some(k)),
        Err(_) if known_anywhere(key) => Ok(None),
        Err(_) => Err(StorageError::Other {
            location: location.clone(),
            message: format!(
                "unknown storage option {key:?} (object_store's configuration keys: aws_*, google_*, azure_*, or \
                 client keys such as allow_http, timeout)"
            ),
        }),
    }
}

fn build_error(location: &Location, error: object_store::Error) -> StorageError {
    StorageError::Other {
        location: location.clone(),
        message: format!("can't set up the object store: {error}"),
    }
}

fn is_true(value: &str) -> bool {
    matches!(value.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on")
}

/// A store for `scheme://authority` with `options` (lower-case keys) and the URI's `query`.
fn make_store(
    kind: Kind,
    split: &SplitUri<'_>,
    options: &BTreeMap<String, String>,
    query: Option<Vec<(AmazonS3ConfigKey, String)>>,
    location: &Location,
) -> Result<Arc<dyn ObjectStore>, StorageError> {
    let base = format!("{}://{}", split.scheme, split.authority);
    let store: Arc<dyn ObjectStore> = match kind {
        Kind::S3 => {
            let mut builder = AmazonS3Builder::from_env().with_url(format!("s3://{}", split.authority));
            for (key, value) in options {
                if let Some(k) = option_for::<AmazonS3ConfigKey>(key, location)? {
                    builder = builder.with_config(k, value);
                }
            }
            for (k, value) in query.unwrap_or_default() {
                builder = builder.with_config(k, value);
            }
            // An explicit http:// endpoint is a choice of plain HTTP: no AWS_ALLOW_HTTP needed too.
            let endpoint = builder
                .get_config_value(&AmazonS3ConfigKey::Endpoint)
                .unwrap_or_default();
            if endpoint.to_ascii_lowercase().starts_with("http://") {
                builder = builder.with_config(AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp), "true");
            }
            Arc::new(builder.build().map_err(|e| build_error(location, e))?)
        }
        Kind::Gcs => {
            let mut builder = GoogleCloudStorageBuilder::from_env().with_url(&base);
            for (key, value) in options {
                if let Some(k) = option_for::<GoogleConfigKey>(key, location)? {
                    builder = builder.with_config(k, value);
                }
            }
            Arc::new(builder.build().map_err(|e| build_error(location, e))?)
        }
        Kind::Azure => {
            let mut builder = MicrosoftAzureBuilder::from_env().with_url(&base);
            for (key, value) in options {
                if let Some(k) = option_for::<AzureConfigKey>(key, location)? {
                    builder = builder.with_config(k, value);
                }
            }
            Arc::new(builder.build().map_err(|e| build_error(location, e))?)
        }
        Kind::Http => {
            let mut builder = HttpBuilder::new().with_url(&base);
            let mut allow_http = split.scheme.eq_ignore_ascii_case("http");
            for (key, value) in options {
                if let Some(k) = option_for::<ClientConfigKey>(key, location)? {
                    if k == ClientConfigKey::AllowHttp {
                        allow_http = is_true(value);
                    }
                    builder = builder.with_config(k, value);
                }
            }
            // An http:// URI is a choice of plain HTTP.
            builder = builder.with_config(ClientConfigKey::AllowHttp, allow_http.to_string());
            Arc::new(builder.build().map_err(|e| build_error(location, e))?)
        }
    };
    Ok(store)
}

type StoreKey = (
    String,
    String,
    Option<String>,
    BTreeMap<String, String>,
    Vec<(String, String)>,
);

/// The environment variables a store of `kind` reads (a store is made again when they change).
fn environment_of(kind: Kind) -> Vec<(String, String)> {
    let prefix = match kind {
        Kind::S3 => "AWS_",
        Kind::Gcs => "GOOGLE_",
        Kind::Azure => "AZURE_",
        Kind::Http => return Vec::new(),
    };
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k.starts_with(prefix))
        .collect();
    vars.sort();
    vars
}

/// Stores made in one process (its id), by (scheme, authority, query, options, environment).
type Stores = (u32, HashMap<StoreKey, Arc<ObjectStorage>>);

/// Stores made so far in this process.
static STORES: Mutex<Option<Stores>> = Mutex::new(None);

/// A storage and the location it was asked for.
pub type Resolved = (Arc<dyn Storage>, Location);

/// The storage serving `text` (a URI) and `text` as its location, or `Ok(None)`
/// when the object stores don't serve it: a local path, a `file:` URI, a scheme
/// such as `hdfs://` or `mock://`, or a query with keys other than pyarrow's S3
/// ones listed in this module's docs (the caller reads such URIs another way).
///
/// `options` are object_store configuration keys (`aws_endpoint`,
/// `aws_access_key_id`, `google_service_account`, `azure_storage_account_key`,
/// `allow_http`...; case-insensitive), applied over the environment's. A key no
/// store knows is an error; another store kind's key is ignored. Stores are made
/// once per (scheme, bucket, query, options, the store's environment variables) and process.
pub fn resolve(text: &str, options: &HashMap<String, String>) -> Result<Option<Resolved>, StorageError> {
    let Some(split) = split_uri(text) else {
        return Ok(None);
    };
    let scheme = split.canonical_scheme();
    let Some(kind) = kind_of(&scheme) else {
        return Ok(None);
    };
    if split.authority.is_empty() {
        return Ok(None);
    }
    let location = Location::new(text);
    let query = match (kind, split.query) {
        (_, None) => None,
        (Kind::S3, Some(query)) => match s3_query_options(query) {
            Some(options) => Some(options),
            None => return Ok(None),
        },
        // A query on other stores: pyarrow's dialect, or part of an HTTP address; not ours.
        (_, Some(_)) => return Ok(None),
    };
    let options: BTreeMap<String, String> = options
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .collect();
    let key: StoreKey = (
        scheme.clone(),
        split.authority.to_string(),
        split.query.map(str::to_string),
        options.clone(),
        environment_of(kind),
    );
    let pid = std::process::id();
    {
        let mut stores = STORES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if stores.as_ref().is_some_and(|(owner, _)| *owner != pid) {
            // A forked child: the parent's clients hold connections of the parent's runtime.
            std::mem::forget(stores.take());
        }
        if let Some(found) = stores.as_ref().and_then(|(_, map)| map.get(&key)) {
            return Ok(Some((Arc::clone(found) as Arc<dyn Storage>, location)));
        }
    }
    let runtime = runtime().map_err(|e| StorageError::Other {
        location: location.clone(),
        message: format!("can't start the I/O runtime: {e}"),
    })?;
    let store = {
        let _inside = runtime.enter();
        make_store(kind, &split, &options, query, &location)?
    };
    let storage = Arc::new(ObjectStorage::new(store, &scheme, split.authority));
    let mut stores = STORES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (_, map) = stores.get_or_insert_with(|| (pid, HashMap::new()));
    let storage = Arc::clone(map.entry(key).or_insert(storage));
    Ok(Some((storage as Arc<dyn Storage>, location)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_schemes() {
        let s = split_uri("s3a://bucket/p/orders-0/0.log?region=x").unwrap();
        assert_eq!(
            (s.scheme, s.authority, s.key, s.query),
            ("s3a", "bucket", "p/orders-0/0.log", Some("region=x"))
        );
        assert_eq!(s.canonical_scheme(), "s3");
        assert_eq!(split_uri("gs://b").unwrap().key, "");
        assert!(split_uri("/data/orders-0").is_none());
        assert!(split_uri("1x://b/c").is_none());
        for served in [
            "s3://b/p",
            "S3N://b/",
            "s3a://b",
            "gs://b/x",
            "abfs://c@a.dfs.core.windows.net/p",
            "az://c/p",
        ] {
            assert!(serves(served), "{served}");
        }
        for not in [
            "file:///tmp/x",
            "/tmp/x",
            "mock:///tmp/x",
            "hdfs://nn/x",
            "s3:///nobucket",
            "relative/path",
        ] {
            assert!(!serves(not), "{not}");
        }
    }

    #[test]
    fn pyarrow_query_dialect() {
        let got = s3_query_options("endpoint_override=127.0.0.1:9000&scheme=http&region=eu-west-1").unwrap();
        assert_eq!(
            got,
            vec![
                (AmazonS3ConfigKey::Endpoint, "http://127.0.0.1:9000".to_string()),
                (AmazonS3ConfigKey::Region, "eu-west-1".to_string())
            ]
        );
        assert_eq!(
            s3_query_options("endpoint_override=minio:9000").unwrap(),
            vec![(AmazonS3ConfigKey::Endpoint, "https://minio:9000".to_string())]
        );
        assert!(s3_query_options("allow_bucket_creation=true").is_none());
    }

    #[test]
    fn resolve_serves_and_declines() {
        let none = HashMap::new();
        assert!(resolve("/tmp/x", &none).unwrap().is_none());
        assert!(resolve("mock:///tmp/x", &none).unwrap().is_none());
        assert!(resolve("s3://b/p?allow_bucket_creation=true", &none).unwrap().is_none());
        assert!(resolve("gs://b/p?endpoint_override=x", &none).unwrap().is_none());
        let options = HashMap::from([
            ("AWS_REGION".to_string(), "us-east-1".to_string()),
            ("aws_endpoint".to_string(), "http://127.0.0.1:1".to_string()),
            ("google_service_account".to_string(), "ignored-for-s3".to_string()),
        ]);
        let (a, at) = resolve("s3a://b/p/", &options).unwrap().unwrap();
        assert_eq!(at.as_str(), "s3a://b/p/");
        let (b, _) = resolve("s3://b/q", &options).unwrap().unwrap();
        assert!(Arc::ptr_eq(&a, &b), "one store per bucket and options");
        let bad = HashMap::from([("no_such_key".to_string(), "1".to_string())]);
        let err = resolve("s3://b/p", &bad).unwrap_err().to_string();
        assert!(err.contains("unknown storage option \"no_such_key\""), "{err}");
        assert!(resolve("https://example.com/data/0.log", &none).unwrap().is_some());
    }
}
