//! The RSA key pairs that wrap segments' data keys.
//!
//! The plugin wraps each segment's AES-256 data key with the public key of
//! its active key pair, `RSA/NONE/OAEPWithSHA3-512AndMGF1Padding` in
//! BouncyCastle's naming: OAEP with SHA3-512 as both the label hash and the
//! MGF1 hash, and an empty label. Reading needs the private key, in PEM:
//! PKCS#8 (`BEGIN PRIVATE KEY`, what the plugin itself reads) or PKCS#1
//! (`BEGIN RSA PRIVATE KEY`).

use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs8::DecodePrivateKey;
use std::collections::BTreeMap;

use rsa::{Oaep, RsaPrivateKey};

use super::{Manifest, TieredError, Transform};

const PKCS8: &str = "-----BEGIN PRIVATE KEY-----";
const PKCS1: &str = "-----BEGIN RSA PRIVATE KEY-----";

/// The private key in `pem`, which may hold other blocks (a public key, a
/// certificate) around it.
pub fn parse_private_key(pem: &str) -> Result<RsaPrivateKey, TieredError> {
    let block = |begin: &str| -> Option<&str> {
        let start = pem.find(begin)?;
        let end_marker = begin.replace("BEGIN", "END");
        let end = pem[start..].find(&end_marker)? + start + end_marker.len();
        Some(&pem[start..end])
    };
    if let Some(block) = block(PKCS8) {
        if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
            return Err(TieredError::key("encrypted PEM private keys are not supported"));
        }
        return RsaPrivateKey::from_pkcs8_pem(block)
            .map_err(|e| TieredError::key(format!("not an RSA private key in PKCS#8 PEM: {e}")));
    }
    if let Some(block) = block(PKCS1) {
        return RsaPrivateKey::from_pkcs1_pem(block)
            .map_err(|e| TieredError::key(format!("not an RSA private key in PKCS#1 PEM: {e}")));
    }
    if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return Err(TieredError::key("encrypted PEM private keys are not supported"));
    }
    Err(TieredError::key(
        "no private key in the PEM text (expected '-----BEGIN PRIVATE KEY-----' or '-----BEGIN RSA PRIVATE KEY-----')",
    ))
}

/// Unwrap a segment's data key (`None`: this key did not wrap it).
pub fn unwrap_data_key(key: &RsaPrivateKey, wrapped: &[u8]) -> Option<Vec<u8>> {
    key.decrypt(Oaep::new::<sha3::Sha3_512>(), wrapped).ok()
}

/// The transform undoing `manifest`'s chunks: its compression, and for an
/// encrypted segment its data key unwrapped with the key pair it names among
/// `keys` (key-pair id → private key). A missing or wrong key is a key error
/// naming the key pair and the keys given.
pub fn transform_for(manifest: &Manifest, keys: &BTreeMap<String, RsaPrivateKey>) -> Result<Transform, TieredError> {
    let Some(enc) = &manifest.encryption else {
        return Transform::new(manifest.compression, None);
    };
    let Some(key) = keys.get(&enc.key_id) else {
        return Err(TieredError::key(if keys.is_empty() {
            format!(
                "the segment is encrypted with key pair {:?} and no keys were given (tiered_keys)",
                enc.key_id
            )
        } else {
            let known: Vec<&str> = keys.keys().map(String::as_str).collect();
            format!(
                "the segment is encrypted with key pair {:?}, which is not among the keys given ({})",
                enc.key_id,
                known.join(", ")
            )
        }));
    };
    let data_key = unwrap_data_key(key, &enc.wrapped_key).ok_or_else(|| {
        TieredError::key(format!(
            "the private key given for key pair {:?} does not unwrap the segment's data key (wrong key?)",
            enc.key_id
        ))
    })?;
    Transform::new(manifest.compression, Some((&data_key, &enc.aad)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2048-bit test key, made with `openssl genpkey -algorithm RSA`.
    pub(crate) const TEST_KEY_PKCS8: &str = include_str!("testdata/key-pkcs8.pem");
    const TEST_KEY_PKCS1: &str = include_str!("testdata/key-pkcs1.pem");
    /// A 32-byte data key wrapped with [`TEST_KEY_PKCS8`]'s public half by
    /// pycryptodome (`PKCS1_OAEP.new(key, hashAlgo=SHA3_512)`).
    const WRAPPED: &str = include_str!("testdata/wrapped-key.b64");

    #[test]
    fn unwraps_an_independently_wrapped_key() {
        use base64::Engine;
        let wrapped = crate::tiered::chunk_index::BASE64.decode(WRAPPED.trim()).unwrap();
        for pem in [TEST_KEY_PKCS8, TEST_KEY_PKCS1] {
            let key = parse_private_key(pem).unwrap();
            let data_key = unwrap_data_key(&key, &wrapped).unwrap();
            assert_eq!(data_key, (0u8..32).collect::<Vec<_>>());
            let mut bad = wrapped.clone();
            bad[10] ^= 1;
            assert!(unwrap_data_key(&key, &bad).is_none());
        }
    }

    #[test]
    fn bad_pem() {
        assert!(parse_private_key("hello").is_err());
        assert!(parse_private_key("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").is_err());
    }
}
