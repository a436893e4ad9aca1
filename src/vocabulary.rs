//! Errors in the caller's vocabulary: the core's messages name options with
//! Python's keyword names (`value_format='json' needs value_schema`,
//! `no keys were given (tiered_keys)`); a front end says them again in its
//! own names: the command line's (`--value-format json needs
//! --value-schema`) or the Spark source's (`valueFormat=json needs
//! valueSchema`). One table, so a message added for a new option is
//! translated everywhere.
//!
//! ```
//! use kafkabatch::vocabulary::{in_words, Words};
//! assert_eq!(
//!     in_words("key_format must be one of binary, string, json, avro, not 'xml'", Words::Spark),
//!     "keyFormat must be one of binary, string, json, avro, not 'xml'"
//! );
//! assert_eq!(
//!     in_words("the segment is encrypted with key pair \"k\" and no keys were given (tiered_keys)", Words::Cli),
//!     "the segment is encrypted with key pair \"k\" and no keys were given (--tiered-key)"
//! );
//! ```

/// Whose names a message uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Words {
    /// `kafkabatch convert`'s flags.
    Cli,
    /// The `kafka-log` Spark source's options.
    Spark,
}

/// Python's keyword names, with the command line's and the Spark source's.
const NAMES: &[(&str, &str, &str)] = &[
    ("value_format", "--value-format", "valueFormat"),
    ("key_format", "--key-format", "keyFormat"),
    ("value_schema", "--value-schema", "valueSchema"),
    ("key_schema", "--key-schema", "keySchema"),
    ("schema_registry", "--schema-registry", "schemaRegistry"),
    ("on_value_error", "--on-value-error", "onValueError"),
    ("tiered_keys", "--tiered-key", "tieredKeys"),
];

const JSON_SCHEMA: &str = "(a pyarrow struct type or schema)";
const PROTOBUF_SCHEMA: &str =
    "_schema (a generated message class, or a dict with 'message' and 'descriptor_set' or 'proto')";

impl Words {
    fn name(self, python: &str) -> Option<&'static str> {
        NAMES.iter().find(|n| n.0 == python).map(|n| match self {
            Words::Cli => n.1,
            Words::Spark => n.2,
        })
    }

    fn format_is(self, column: &str, format: &str) -> String {
        match self {
            Words::Cli => format!("--{column}-format {format}"),
            Words::Spark => format!("{column}Format={format}"),
        }
    }

    fn json_schema(self) -> &'static str {
        match self {
            Words::Cli => "(a JSON Schema, Avro record schema or Spark DDL: a file or the text)",
            Words::Spark => "(a Spark DDL string or StructType JSON)",
        }
    }

    fn protobuf_schema(self, column: &str) -> String {
        match self {
            Words::Cli => {
                format!("--{column}-message with --{column}-schema (a .proto file) or --{column}-descriptor-set")
            }
            Words::Spark => {
                format!("{column}Message with {column}Schema (.proto text or file) or {column}DescriptorSet")
            }
        }
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The word of `\w` characters at the start of `text`.
fn word(text: &str) -> &str {
    let end = text.find(|c: char| !is_word(c)).unwrap_or(text.len());
    &text[..end]
}

/// `message` with the option names in Python's words said in `words`.
pub fn in_words(message: &str, words: Words) -> String {
    let mut out = String::with_capacity(message.len() + 16);
    let mut rest = message;
    // whether the character before `rest` (in `message`) is a word character: `\b` is its absence
    let mut after_word = false;
    while let Some(c) = rest.chars().next() {
        if !after_word && is_word(c) {
            after_word = true;
            let w = word(rest);
            let after = &rest[w.len()..];
            // `value_schema (a generated message class, …)`
            if let Some(column) = ["value", "key"].into_iter().find(|c| w == format!("{c}_schema")) {
                if let Some(tail) = after.strip_prefix(&PROTOBUF_SCHEMA["_schema".len()..]) {
                    out += &words.protobuf_schema(column);
                    rest = tail;
                    after_word = false; // it ended with ')'
                    continue;
                }
            }
            // `value_format='json'` or `value_format='json' or 'avro'`
            if let Some(column) = ["value", "key"].into_iter().find(|c| w == format!("{c}_format")) {
                if let Some((first, tail)) = quoted_word(after.strip_prefix('=')) {
                    out += &words.format_is(column, first);
                    rest = tail;
                    if let Some((second, tail)) = quoted_word(rest.strip_prefix(" or ")) {
                        out += &format!(" or {second}");
                        rest = tail;
                    }
                    after_word = false; // it ended with a quote
                    continue;
                }
            }
            match words.name(w) {
                Some(name) => out += name,
                None => out += w,
            }
            rest = after;
            continue;
        }
        after_word = is_word(c);
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.replace(JSON_SCHEMA, words.json_schema())
}

/// `'word'` at the start of `text`: the word and what follows.
fn quoted_word(text: Option<&str>) -> Option<(&str, &str)> {
    let inner = text?.strip_prefix('\'')?;
    let w = word(inner);
    let tail = inner[w.len()..].strip_prefix('\'')?;
    (!w.is_empty()).then_some((w, tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_python_modules_examples_read_the_same() {
        // python/kafkabatch/values/vocabulary.py's doctests and test_values_vocabulary's cases
        assert_eq!(
            in_words("value_format='json' needs value_schema (a pyarrow struct type or schema)", Words::Cli),
            "--value-format json needs --value-schema (a JSON Schema, Avro record schema or Spark DDL: a file or the text)"
        );
        assert_eq!(
            in_words("value_format='json' needs value_schema", Words::Spark),
            "valueFormat=json needs valueSchema"
        );
        assert_eq!(
            in_words("key_format='avro' or 'protobuf' takes no on_value_error", Words::Spark),
            "keyFormat=avro or protobuf takes no onValueError"
        );
        assert_eq!(
            in_words(
                "value_format='protobuf' needs value_schema (a generated message class, or a dict with 'message' and 'descriptor_set' or 'proto')",
                Words::Spark
            ),
            "valueFormat=protobuf needs valueMessage with valueSchema (.proto text or file) or valueDescriptorSet"
        );
    }

    #[test]
    fn only_whole_names_change() {
        let text = "my_value_format and value_formats stay; schema_registry: goes";
        assert_eq!(
            in_words(text, Words::Spark),
            "my_value_format and value_formats stay; schemaRegistry: goes"
        );
        assert_eq!(in_words("", Words::Cli), "");
        assert_eq!(in_words("é tiered_keys", Words::Spark), "é tieredKeys");
    }
}
