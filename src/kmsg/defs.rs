//! The set of definitions a decode uses: the shipped ones, optionally
//! overridden or extended by a folder of Kafka's own `*.json` files, and
//! which internal topic each record belongs to.

use std::path::Path;

use super::builtin::FILES;
use super::model::{MessageDef, Registry};

/// Kafka's internal topics (and the consumer protocol, read inside group metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    ConsumerOffsets,
    TransactionState,
    ShareGroupState,
    ClusterMetadata,
    RemoteLogMetadata,
    ConsumerProtocol,
}

impl Kind {
    pub const TOPICS: [Kind; 5] = [
        Kind::ConsumerOffsets,
        Kind::TransactionState,
        Kind::ShareGroupState,
        Kind::ClusterMetadata,
        Kind::RemoteLogMetadata,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::ConsumerOffsets => "consumer_offsets",
            Kind::TransactionState => "transaction_state",
            Kind::ShareGroupState => "share_group_state",
            Kind::ClusterMetadata => "cluster_metadata",
            Kind::RemoteLogMetadata => "remote_log_metadata",
            Kind::ConsumerProtocol => "consumer_protocol",
        }
    }

    pub fn parse(name: &str) -> Option<Kind> {
        [Kind::ConsumerProtocol]
            .into_iter()
            .chain(Kind::TOPICS)
            .find(|k| k.name() == name)
    }

    /// Whether records are framed as coordinator records (int16 key type
    /// + key, int16 version + value) rather than metadata records.
    pub fn is_coordinator(self) -> bool {
        matches!(
            self,
            Kind::ConsumerOffsets | Kind::TransactionState | Kind::ShareGroupState
        )
    }
}

/// The `*.json` files of a folder of definitions, in the order they are added (by name).
pub(crate) fn definition_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Definitions and the topic each message belongs to.
#[derive(Debug, Clone)]
pub struct Definitions {
    pub reg: Registry,
    kinds: Vec<Kind>,
}

impl Definitions {
    /// The definitions the project ships.
    pub fn builtin() -> Definitions {
        let mut defs = Definitions {
            reg: Registry::default(),
            kinds: Vec::new(),
        };
        for (group, text) in FILES {
            let kind = Kind::parse(group).unwrap_or(Kind::ConsumerOffsets);
            // The shipped files are tested to load (kmsg::tests::builtin_loads).
            if let Ok(i) = defs.reg.add_json(text) {
                defs.set_kind(i, kind);
            }
        }
        defs
    }

    /// The shipped definitions plus every `*.json` file of `dir` (Kafka's own
    /// definition files); a file's message replaces a shipped one of the same name.
    pub fn with_dir(dir: &Path) -> Result<Definitions, String> {
        let mut defs = Definitions::builtin();
        for path in definition_files(dir)? {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            defs.add(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(defs)
    }

    /// Add one definition (text of a Kafka JSON file); its topic is that of
    /// the message it replaces, else guessed from its type and name.
    pub fn add(&mut self, text: &str) -> Result<usize, String> {
        let before = self.reg.messages.len();
        let i = self.reg.add_json(text)?;
        if i >= before {
            let m = &self.reg.messages[i];
            let kind = guess_kind(m);
            self.set_kind(i, kind);
        }
        Ok(i)
    }

    fn set_kind(&mut self, i: usize, kind: Kind) {
        if self.kinds.len() <= i {
            self.kinds.resize(i + 1, Kind::ConsumerOffsets);
        }
        self.kinds[i] = kind;
    }

    pub fn kind_of(&self, i: usize) -> Kind {
        self.kinds.get(i).copied().unwrap_or(Kind::ConsumerOffsets)
    }

    /// The messages of one topic, in the order they were added.
    pub fn messages_of(&self, kind: Kind) -> impl Iterator<Item = (usize, &MessageDef)> {
        self.reg
            .messages
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.kind_of(*i) == kind)
    }
}

fn guess_kind(m: &MessageDef) -> Kind {
    let name = m.name.as_str();
    if name.starts_with("ConsumerProtocol") {
        Kind::ConsumerProtocol
    } else if name.starts_with("TransactionLog") {
        Kind::TransactionState
    } else if name.starts_with("ShareSnapshot") || name.starts_with("ShareUpdate") {
        Kind::ShareGroupState
    } else if name.starts_with("Remote") && m.api_key.is_some() {
        Kind::RemoteLogMetadata
    } else if m.kind == "metadata" || control_type(name).is_some() {
        Kind::ClusterMetadata
    } else {
        Kind::ConsumerOffsets
    }
}

/// The KRaft control record type (Kafka's `ControlRecordType`) a message is
/// the value of, with the name the tables use for it.
pub fn control_type(message: &str) -> Option<(i16, &'static str)> {
    Some(match message {
        "LeaderChangeMessage" => (2, "LeaderChange"),
        "SnapshotHeaderRecord" => (3, "SnapshotHeader"),
        "SnapshotFooterRecord" => (4, "SnapshotFooter"),
        "KRaftVersionRecord" => (5, "KRaftVersion"),
        "VotersRecord" => (6, "Voters"),
        _ => return None,
    })
}
