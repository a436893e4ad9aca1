//! A fast, deterministic generator of realistic Kafka partition folders:
//! segments of record batches written through the streaming
//! [`Encoder`], with the index files a broker keeps
//! beside them. Pure Rust; `kafkabatch.generate` (Python) only orchestrates
//! topics, partitions, threads and the progress bar.
//!
//! One [`PartitionGenerator`] writes one `<topic>-<partition>` folder:
//!
//! * `<20-digit base offset>.log` segments, rolled before an append would take
//!   the segment past `segment_bytes` (as a broker's `segment.bytes`). A roll
//!   is put off while a transaction is open in the partition (the open
//!   transactions are finished first, and no new one starts meanwhile), so
//!   every transaction and its marker sit in one segment and each segment
//!   reads back on its own with `read_committed`.
//! * `.index`: relative offset int32 -> byte position int32, written as
//!   Kafka's `LogSegment.append` does: after more than `index_interval_bytes`
//!   (`index.interval.bytes`, 4096) have been appended since the last entry,
//!   the next append gets an entry (its last offset -> its first byte).
//! * `.timeindex`: largest timestamp so far int64 -> relative offset int32 of
//!   the batch holding it (Kafka's "shallow offset of max timestamp"),
//!   appended with each `.index` entry when the timestamp grew, and once more
//!   when the segment is closed (`LogSegment.close`). Magic 0 data has none.
//! * `.txnindex`: one 34-byte entry per transaction aborted in the segment
//!   (version int16 0, producerId int64, firstOffset int64, lastOffset int64
//!   = the ABORT marker, lastStableOffset int64), written only for segments
//!   that have one, as brokers create the file lazily.
//! * `leader-epoch-checkpoint` (version 0, one entry: epoch 0 from offset 0).
//!
//! Index files are written trimmed to their entries (as a broker leaves an
//! inactive segment), not preallocated. All integers are big-endian.
//!
//! Data: each batch is one producer's append. Magic-2 partitions have two
//! idempotent producers (producer id, epoch, per-partition sequences), an
//! occasional non-idempotent one, and `transactional_producers` producers
//! whose transactions (1-3 batches) end with a COMMIT or (about 30%) an
//! ABORT control batch, interleaved with everything else. Record contents
//! depend on the [`Kind`]: JSON-ish values of ~100-1000 bytes, string keys,
//! 0-3 headers (v2; duplicate keys and null values included), timestamps
//! increasing from `start_timestamp`. Everything comes from a seeded
//! splitmix64 stream: the same config writes the same bytes.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::compression::{Codec, CompressOptions};
use crate::encode::{control_batch, ControlKind, EncodeError, EncodeOptions, Encoder, HeaderRef, RecordRef};

/// Kafka's `index.interval.bytes` default.
pub const DEFAULT_INDEX_INTERVAL_BYTES: u64 = 4096;

/// Why a partition could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Encode(#[from] EncodeError),
    #[error("invalid {argument}: {reason}")]
    InvalidConfig { argument: &'static str, reason: String },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> GenerateError + '_ {
    move |source| GenerateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What the records of a topic look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Shop orders with line items; keys `ord-...`.
    Orders,
    /// Web click-stream events; keys are session ids, ~10% null (keyless).
    Clicks,
    /// Payments; keys `pay-...`.
    Payments,
    /// Customer profiles of a compacted topic; ~5% null values (tombstones).
    Customers,
    /// Audit log lines; keys `svc-...`, ~20% null.
    Audit,
    /// Generic events.
    Events,
    /// Shipments as Confluent-framed Avro (Schema Registry wire format:
    /// magic 0, schema id, datum), written during a rolling producer
    /// upgrade: about half with [`SHIPMENT_SCHEMA_V1`], half with
    /// [`SHIPMENT_SCHEMA_V2`] (which adds fields with defaults); keys `shp-...`.
    Shipments,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Orders,
        Kind::Clicks,
        Kind::Payments,
        Kind::Customers,
        Kind::Audit,
        Kind::Events,
        Kind::Shipments,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Orders => "orders",
            Kind::Clicks => "clicks",
            Kind::Payments => "payments",
            Kind::Customers => "customers",
            Kind::Audit => "audit",
            Kind::Events => "events",
            Kind::Shipments => "shipments",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// (min, max) records a producer puts in one batch.
    fn records_per_batch(self) -> (u64, u64) {
        match self {
            Kind::Orders => (1, 60),
            Kind::Clicks => (10, 200),
            Kind::Payments => (1, 25),
            Kind::Customers => (1, 40),
            Kind::Audit => (1, 50),
            Kind::Events => (1, 100),
            Kind::Shipments => (1, 40),
        }
    }

    /// Mean milliseconds between records.
    fn mean_gap_ms(self) -> u64 {
        match self {
            Kind::Orders => 20,
            Kind::Clicks => 2,
            Kind::Payments => 40,
            Kind::Customers => 60,
            Kind::Audit => 10,
            Kind::Events => 5,
            Kind::Shipments => 30,
        }
    }
}

/// Everything one partition needs.
#[derive(Debug, Clone)]
pub struct PartitionConfig {
    /// The `<topic>-<partition>` folder (created; must hold no segments yet).
    pub dir: PathBuf,
    pub topic: String,
    pub partition: i32,
    pub kind: Kind,
    /// 0, 1 or 2. Producer ids, headers and transactions need 2.
    pub magic: i8,
    pub codec: Codec,
    pub compress: CompressOptions,
    /// Stop appending once the `.log` files hold this many bytes (the last
    /// append and the markers of still-open transactions go a little past).
    pub target_bytes: u64,
    /// Roll to a new segment before an append would pass this size.
    pub segment_bytes: u64,
    pub index_interval_bytes: u64,
    /// The generator's seed; mixed with topic and partition.
    pub seed: u64,
    /// Milliseconds of the first record (a little jitter is added per partition).
    pub start_timestamp: i64,
    /// Producer ids of this topic start here (shared by its partitions, as
    /// one producer writes to many partitions).
    pub producer_id_base: i64,
    /// Transactional producers (magic 2 only; 0 for none).
    pub transactional_producers: u32,
    /// Uncompressed bytes after which a producer closes a batch (`batch.size`).
    pub batch_bytes: u64,
}

impl PartitionConfig {
    /// A config with this crate's defaults for the rest.
    pub fn new(dir: impl Into<PathBuf>, topic: &str, partition: i32, kind: Kind) -> Self {
        PartitionConfig {
            dir: dir.into(),
            topic: topic.to_string(),
            partition,
            kind,
            magic: 2,
            codec: Codec::None,
            compress: CompressOptions::default(),
            target_bytes: 1 << 20,
            segment_bytes: 16 << 20,
            index_interval_bytes: DEFAULT_INDEX_INTERVAL_BYTES,
            seed: 0,
            start_timestamp: 1_793_491_200_000, // 2026-11-01T00:00:00Z
            producer_id_base: 1000,
            transactional_producers: 2,
            batch_bytes: 16384,
        }
    }
}

/// What a partition's generator wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionSummary {
    /// Bytes of the `.log` segments.
    pub log_bytes: u64,
    /// Bytes of the `.index`, `.timeindex` and `.txnindex` files.
    pub index_bytes: u64,
    pub segments: u64,
    /// Data records (control records not included), aborted ones included.
    pub records: u64,
    /// Top-level batches as a reader walks them: v2 batches (control batches
    /// included), legacy wrappers, and legacy uncompressed messages.
    pub batches: u64,
    pub control_batches: u64,
    /// Records in committed and in aborted transactions.
    pub committed_records: u64,
    pub aborted_records: u64,
    pub committed_transactions: u64,
    pub aborted_transactions: u64,
    /// Records with a null value (tombstones) and with a null key.
    pub tombstones: u64,
    pub null_keys: u64,
    /// The offset after the last one written (the log end offset).
    pub next_offset: i64,
    pub first_timestamp: i64,
    pub last_timestamp: i64,
}

// ---------------------------------------------------------------------------
// PRNG and text helpers
// ---------------------------------------------------------------------------

/// splitmix64: tiny, fast, and good enough for sample data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`/100.
    #[inline]
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    #[inline]
    pub fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Seed for one partition: the user's seed mixed with topic and partition.
pub fn partition_seed(seed: u64, topic: &str, partition: i32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325; // FNV-1a
    for b in topic.as_bytes().iter().chain(&partition.to_be_bytes()) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
    let mut r = Rng::new(seed ^ h);
    r.next_u64()
}

#[inline]
fn s(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(text.as_bytes());
}

/// Decimal digits of `n`.
#[inline]
fn num(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// `n` zero-padded to `width` digits (more if it needs them).
#[inline]
fn padded(out: &mut Vec<u8>, mut n: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    while n > 0 || buf.len() - i < width.min(20) {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&buf[i..]);
}

#[inline]
fn hex(out: &mut Vec<u8>, x: u64, digits: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..digits.min(16)).rev() {
        out.push(HEX[((x >> (4 * i)) & 0xf) as usize]);
    }
}

/// Cents as `12.34`.
#[inline]
fn money(out: &mut Vec<u8>, cents: u64) {
    num(out, cents / 100);
    out.push(b'.');
    padded(out, cents % 100, 2);
}

/// Thousandths as `0.123`.
#[inline]
fn fraction(out: &mut Vec<u8>, thousandths: u64) {
    num(out, thousandths / 1000);
    out.push(b'.');
    padded(out, thousandths % 1000, 3);
}

/// (year, month, day) of days since 1970-01-01 (H. Hinnant's civil_from_days).
fn civil_from_days(days: i64) -> (i64, u64, u64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u64;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u64;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Milliseconds since the epoch as `2026-11-01T00:00:01.234Z`.
fn iso_time(out: &mut Vec<u8>, ms: i64) {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000) as u64;
    let (y, m, d) = civil_from_days(days);
    padded(out, y.max(0) as u64, 4);
    out.push(b'-');
    padded(out, m, 2);
    out.push(b'-');
    padded(out, d, 2);
    out.push(b'T');
    padded(out, in_day / 3_600_000, 2);
    out.push(b':');
    padded(out, in_day / 60_000 % 60, 2);
    out.push(b':');
    padded(out, in_day / 1000 % 60, 2);
    out.push(b'.');
    padded(out, in_day % 1000, 3);
    out.push(b'Z');
}

const WORDS: &[&str] = &[
    "the",
    "order",
    "was",
    "shipped",
    "quickly",
    "and",
    "arrived",
    "in",
    "good",
    "condition",
    "please",
    "leave",
    "at",
    "front",
    "door",
    "customer",
    "asked",
    "for",
    "gift",
    "wrapping",
    "call",
    "before",
    "delivery",
    "fragile",
    "handle",
    "with",
    "care",
    "second",
    "attempt",
    "payment",
    "retried",
    "after",
    "timeout",
    "new",
    "address",
    "confirmed",
    "by",
    "email",
    "support",
    "ticket",
    "opened",
    "refund",
    "requested",
    "partial",
    "item",
    "missing",
    "replacement",
    "sent",
    "express",
    "upgrade",
    "loyalty",
    "points",
    "applied",
    "discount",
    "code",
    "expired",
    "warehouse",
    "north",
    "backorder",
    "expected",
    "next",
    "week",
    "signature",
    "required",
];

/// 0 to 3 quoted picks from `items`, comma-separated (a JSON array's inside).
fn quoted_picks(out: &mut Vec<u8>, rng: &mut Rng, items: &[&str]) {
    for i in 0..rng.below(4) {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        s(out, rng.pick(items));
        out.push(b'"');
    }
}

/// `n` words separated by spaces.
fn words(out: &mut Vec<u8>, rng: &mut Rng, n: u64) {
    for i in 0..n {
        if i > 0 {
            out.push(b' ');
        }
        s(out, rng.pick(WORDS));
    }
}

const STATUSES: &[&str] = &[
    "created",
    "paid",
    "packed",
    "shipped",
    "delivered",
    "cancelled",
    "returned",
];
const CHANNELS: &[&str] = &["web", "ios", "android", "pos", "partner-api"];
const CURRENCIES: &[&str] = &["EUR", "USD", "GBP", "CHF", "SEK", "JPY"];
const PRODUCTS: &[&str] = &[
    "Wireless Mouse",
    "Mechanical Keyboard",
    "USB-C Cable 2m",
    "27\\\" Monitor",
    "Noise Cancelling Headphones",
    "Laptop Stand",
    "Webcam 1080p",
    "Desk Lamp",
    "Ergonomic Chair",
    "Coffee Beans 1kg",
    "Water Bottle",
    "Running Shoes",
    "Yoga Mat",
    "Backpack 30L",
    "Phone Case",
    "Screen Protector",
    "Power Bank 20000mAh",
];
const SHIPPING: &[&str] = &["standard", "express", "pickup", "same-day"];
const COUNTRIES: &[(&str, &str, &str)] = &[
    ("DE", "Berlin", "10115"),
    ("FR", "Paris", "75001"),
    ("NL", "Amsterdam", "1012"),
    ("US", "Seattle", "98101"),
    ("GB", "London", "EC1A"),
    ("SE", "Stockholm", "11122"),
    ("JP", "Tokyo", "100-0001"),
    ("ES", "Madrid", "28001"),
];
const EVENTS: &[&str] = &[
    "page_view",
    "page_view",
    "page_view",
    "click",
    "add_to_cart",
    "search",
    "scroll",
    "checkout_start",
];
const SECTIONS: &[&str] = &["products", "category", "search", "cart", "account", "blog", "deals"];
const SLUGS: &[&str] = &[
    "wireless-mouse",
    "mechanical-keyboard",
    "summer-sale",
    "running-shoes",
    "home-office",
    "gift-ideas",
    "new-arrivals",
    "best-sellers",
    "coffee",
    "outdoor",
];
const SOURCES: &[&str] = &["google", "newsletter", "facebook", "direct", "bing", "affiliate"];
const USER_AGENTS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
];
const LOCALES: &[&str] = &["en-US", "de-DE", "fr-FR", "nl-NL", "en-GB", "ja-JP", "sv-SE"];
const SCREENS: &[(u64, u64)] = &[
    (1920, 1080),
    (2560, 1440),
    (1440, 900),
    (390, 844),
    (412, 915),
    (1366, 768),
];
const METHODS: &[&str] = &["card", "card", "card", "paypal", "sepa_debit", "apple_pay", "klarna"];
const BRANDS: &[&str] = &["visa", "mastercard", "amex"];
const PAY_STATUSES: &[&str] = &["authorized", "captured", "captured", "refunded", "failed", "pending"];
const PROCESSORS: &[&str] = &["adyen", "stripe", "braintree"];
const RULES: &[&str] = &[
    "velocity",
    "geo_mismatch",
    "new_device",
    "high_amount",
    "bin_country",
    "proxy_ip",
];
const FIRST: &[&str] = &[
    "Jane", "John", "Amira", "Lukas", "Sofia", "Kenji", "Olivia", "Mateo", "Chloe", "Noah", "Ingrid", "Ravi",
];
const LAST: &[&str] = &[
    "Doe",
    "Smith",
    "Müller",
    "Dubois",
    "de Vries",
    "Tanaka",
    "García",
    "Johansson",
    "Rossi",
    "Kowalski",
];
const STREETS: &[&str] = &[
    "Main Street",
    "Hauptstraße",
    "Rue de Rivoli",
    "Keizersgracht",
    "Market St",
    "Drottninggatan",
];
const TIERS: &[&str] = &["bronze", "silver", "gold", "platinum"];
const TAGS: &[&str] = &["newsletter", "vip", "b2b", "returns-often", "early-adopter", "student"];
const SERVICES: &[&str] = &[
    "checkout",
    "inventory",
    "billing",
    "auth",
    "search",
    "shipping",
    "admin-portal",
];
const ACTIONS: &[&str] = &["READ", "CREATE", "UPDATE", "DELETE", "LOGIN", "LOGOUT", "EXPORT"];
const RESOURCES: &[&str] = &["orders", "customers", "payments", "products", "users", "reports"];
const EVENT_TYPES: &[&str] = &["created", "updated", "deleted", "heartbeat", "metric"];
const HEADER_SOURCES: &[&str] = &["checkout-service", "mobile-bff", "batch-import", "legacy-gateway"];
const HEADER_TAGS: &[&str] = &["blue", "green", "canary", "eu-west-1", "us-east-1"];

// ---------------------------------------------------------------------------
// records
// ---------------------------------------------------------------------------

/// Where one record's bytes are built; reused for every record.
#[derive(Debug, Default)]
struct Scratch {
    key: Vec<u8>,
    key_null: bool,
    value: Vec<u8>,
    value_null: bool,
    /// Header values, back to back; `headers` holds (key, value range).
    header_values: Vec<u8>,
    headers: Vec<(&'static str, Option<(usize, usize)>)>,
}

/// Per-partition counters the record generator draws ids from.
#[derive(Debug)]
struct Ids {
    order: u64,
    customer_count: u64,
}

fn gen_record(kind: Kind, magic: i8, rng: &mut Rng, ids: &mut Ids, ts: i64, out: &mut Scratch) {
    out.key.clear();
    out.value.clear();
    out.key_null = false;
    out.value_null = false;
    out.header_values.clear();
    out.headers.clear();
    let k = &mut out.key;
    let v = &mut out.value;
    match kind {
        Kind::Orders => {
            ids.order += 1 + rng.below(3);
            let order = ids.order;
            s(k, "ord-");
            padded(k, order, 10);
            s(v, "{\"order_id\":\"ord-");
            padded(v, order, 10);
            s(v, "\",\"customer_id\":\"cus-");
            padded(v, rng.below(ids.customer_count), 6);
            s(v, "\",\"created_at\":\"");
            iso_time(v, ts);
            s(v, "\",\"status\":\"");
            s(v, rng.pick(STATUSES));
            s(v, "\",\"channel\":\"");
            s(v, rng.pick(CHANNELS));
            s(v, "\",\"currency\":\"");
            s(v, rng.pick(CURRENCIES));
            s(v, "\",\"items\":[");
            let items = rng.range(1, 6);
            let mut total = 0u64;
            for i in 0..items {
                if i > 0 {
                    v.push(b',');
                }
                let qty = rng.range(1, 4);
                let price = rng.range(199, 49_999);
                total += qty * price;
                s(v, "{\"sku\":\"SKU-");
                padded(v, rng.below(100_000), 5);
                s(v, "\",\"name\":\"");
                s(v, rng.pick(PRODUCTS));
                s(v, "\",\"qty\":");
                num(v, qty);
                s(v, ",\"unit_price\":");
                money(v, price);
                v.push(b'}');
            }
            s(v, "],\"total\":");
            money(v, total);
            let (country, city, postcode) = COUNTRIES[rng.below(COUNTRIES.len() as u64) as usize];
            s(v, ",\"shipping\":{\"method\":\"");
            s(v, rng.pick(SHIPPING));
            s(v, "\",\"country\":\"");
            s(v, country);
            s(v, "\",\"city\":\"");
            s(v, city);
            s(v, "\",\"postcode\":\"");
            s(v, postcode);
            s(v, "\"},\"coupon\":");
            if rng.percent(20) {
                s(v, "\"SAVE");
                num(v, rng.range(5, 30));
                v.push(b'"');
            } else {
                s(v, "null");
            }
            if rng.percent(40) {
                s(v, ",\"note\":\"");
                let n = rng.range(3, 40);
                words(v, rng, n);
                v.push(b'"');
            }
            v.push(b'}');
        }
        Kind::Clicks => {
            let session = rng.next_u64();
            if rng.percent(10) {
                out.key_null = true;
            } else {
                s(k, "sess-");
                hex(k, session, 16);
            }
            s(v, "{\"event\":\"");
            s(v, rng.pick(EVENTS));
            s(v, "\",\"session_id\":\"");
            hex(v, session, 16);
            s(v, "\",\"user_id\":");
            if rng.percent(30) {
                s(v, "null");
            } else {
                num(v, rng.below(5_000_000));
            }
            s(v, ",\"ts\":");
            num(v, ts.max(0) as u64);
            s(v, ",\"url\":\"https://shop.example.com/");
            s(v, rng.pick(SECTIONS));
            v.push(b'/');
            s(v, rng.pick(SLUGS));
            if rng.percent(35) {
                s(v, "?utm_source=");
                s(v, rng.pick(SOURCES));
                s(v, "&utm_campaign=c");
                num(v, rng.below(500));
            }
            s(v, "\",\"referrer\":");
            if rng.percent(40) {
                s(v, "null");
            } else {
                s(v, "\"https://www.");
                s(v, rng.pick(SOURCES));
                s(v, ".com/\"");
            }
            s(v, ",\"user_agent\":\"");
            s(v, rng.pick(USER_AGENTS));
            let (w, h) = SCREENS[rng.below(SCREENS.len() as u64) as usize];
            s(v, "\",\"screen\":{\"w\":");
            num(v, w);
            s(v, ",\"h\":");
            num(v, h);
            s(v, "},\"locale\":\"");
            s(v, rng.pick(LOCALES));
            s(v, "\",\"experiments\":[");
            for i in 0..rng.below(4) {
                if i > 0 {
                    v.push(b',');
                }
                s(v, "\"exp-");
                num(v, rng.below(100));
                v.push(b'"');
            }
            s(v, "],\"duration_ms\":");
            num(v, rng.below(120_000));
            v.push(b'}');
        }
        Kind::Payments => {
            let id = rng.next_u64();
            s(k, "pay-");
            hex(k, id, 12);
            s(v, "{\"payment_id\":\"pay-");
            hex(v, id, 12);
            s(v, "\",\"order_id\":\"ord-");
            padded(v, rng.below(10_000_000_000), 10);
            s(v, "\",\"amount\":");
            money(v, rng.range(100, 250_000));
            s(v, ",\"currency\":\"");
            s(v, rng.pick(CURRENCIES));
            let method = rng.pick(METHODS);
            s(v, "\",\"method\":\"");
            s(v, method);
            v.push(b'"');
            if method == "card" {
                s(v, ",\"card\":{\"brand\":\"");
                s(v, rng.pick(BRANDS));
                s(v, "\",\"last4\":\"");
                padded(v, rng.below(10_000), 4);
                s(v, "\",\"exp_month\":");
                num(v, rng.range(1, 12));
                s(v, ",\"exp_year\":");
                num(v, rng.range(2026, 2032));
                v.push(b'}');
            }
            s(v, ",\"status\":\"");
            s(v, rng.pick(PAY_STATUSES));
            s(v, "\",\"risk\":{\"score\":");
            fraction(v, rng.below(1000));
            s(v, ",\"rules\":[");
            quoted_picks(v, rng, RULES);
            s(v, "]},\"processor\":\"");
            s(v, rng.pick(PROCESSORS));
            s(v, "\",\"created_at\":\"");
            iso_time(v, ts);
            s(v, "\",\"idempotency_key\":\"");
            hex(v, rng.next_u64(), 16);
            hex(v, rng.next_u64(), 16);
            v.push(b'"');
            if rng.percent(30) {
                s(v, ",\"description\":\"");
                let n = rng.range(2, 25);
                words(v, rng, n);
                v.push(b'"');
            }
            v.push(b'}');
        }
        Kind::Customers => {
            let id = rng.below(ids.customer_count);
            s(k, "cus-");
            padded(k, id, 6);
            if rng.percent(5) {
                out.value_null = true;
            } else {
                let first = rng.pick(FIRST);
                let last = rng.pick(LAST);
                s(v, "{\"customer_id\":\"cus-");
                padded(v, id, 6);
                s(v, "\",\"name\":\"");
                s(v, first);
                v.push(b' ');
                s(v, last);
                s(v, "\",\"email\":\"");
                s(v, &first.to_ascii_lowercase());
                v.push(b'.');
                num(v, id);
                s(v, "@example.com\",\"phone\":\"+");
                num(v, rng.range(1, 99));
                v.push(b' ');
                padded(v, rng.below(1_000_000_000), 9);
                let (country, city, postcode) = COUNTRIES[rng.below(COUNTRIES.len() as u64) as usize];
                s(v, "\",\"address\":{\"street\":\"");
                num(v, rng.range(1, 300));
                v.push(b' ');
                s(v, rng.pick(STREETS));
                s(v, "\",\"city\":\"");
                s(v, city);
                s(v, "\",\"postcode\":\"");
                s(v, postcode);
                s(v, "\",\"country\":\"");
                s(v, country);
                s(v, "\"},\"tier\":\"");
                s(v, rng.pick(TIERS));
                s(v, "\",\"marketing_opt_in\":");
                s(v, if rng.percent(50) { "true" } else { "false" });
                s(v, ",\"tags\":[");
                quoted_picks(v, rng, TAGS);
                s(v, "],\"updated_at\":\"");
                iso_time(v, ts);
                v.push(b'"');
                if rng.percent(50) {
                    s(v, ",\"bio\":\"");
                    let n = rng.range(5, 80);
                    words(v, rng, n);
                    v.push(b'"');
                }
                v.push(b'}');
            }
        }
        Kind::Audit => {
            let service = rng.pick(SERVICES);
            if rng.percent(20) {
                out.key_null = true;
            } else {
                s(k, "svc-");
                s(k, service);
            }
            s(v, "{\"ts\":\"");
            iso_time(v, ts);
            s(v, "\",\"service\":\"");
            s(v, service);
            s(v, "\",\"actor\":\"user:");
            num(v, rng.below(20_000));
            s(v, "\",\"action\":\"");
            s(v, rng.pick(ACTIONS));
            s(v, "\",\"resource\":\"/api/v1/");
            s(v, rng.pick(RESOURCES));
            v.push(b'/');
            num(v, rng.below(10_000_000));
            s(v, "\",\"ip\":\"10.");
            num(v, rng.below(256));
            v.push(b'.');
            num(v, rng.below(256));
            v.push(b'.');
            num(v, rng.below(256));
            s(v, "\",\"status\":");
            num(v, [200, 200, 200, 201, 204, 400, 403, 404, 500][rng.below(9) as usize]);
            s(v, ",\"latency_ms\":");
            num(v, rng.below(2_000));
            s(v, ",\"request_id\":\"");
            hex(v, rng.next_u64(), 16);
            hex(v, rng.next_u64(), 16);
            s(v, "\",\"details\":\"");
            let n = rng.range(1, 60);
            words(v, rng, n);
            s(v, "\"}");
        }
        Kind::Shipments => gen_shipment(rng, ids, ts, 50, out),
        Kind::Events => {
            let id = rng.next_u64();
            hex(k, id, 16);
            s(v, "{\"id\":\"");
            hex(v, id, 16);
            s(v, "\",\"type\":\"");
            s(v, rng.pick(EVENT_TYPES));
            s(v, "\",\"ts\":");
            num(v, ts.max(0) as u64);
            s(v, ",\"payload\":\"");
            let n = rng.range(5, 120);
            words(v, rng, n);
            s(v, "\"}");
        }
    }
    if magic == 2 {
        gen_headers(rng, out);
    }
}

/// Schema Registry ids of the shipments' two writer schemas.
pub const SHIPMENT_SCHEMA_IDS: [u32; 2] = [1, 2];

/// The shipments' first writer schema (Avro JSON, id 1).
pub const SHIPMENT_SCHEMA_V1: &str = r#"{"type":"record","name":"Shipment","namespace":"com.example.shop","fields":[{"name":"shipment_id","type":"string"},{"name":"order_id","type":"string"},{"name":"carrier","type":"string"},{"name":"service","type":"string"},{"name":"weight_grams","type":"int"},{"name":"shipped_at","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"destination","type":{"type":"record","name":"Address","fields":[{"name":"street","type":"string"},{"name":"city","type":"string"},{"name":"postcode","type":"string"},{"name":"country","type":"string"}]}},{"name":"skus","type":{"type":"array","items":"string"}}]}"#;

/// The second (id 2): version 1 plus `tracking_id`, `express` and `notes`,
/// each with a default, so readers of either version read both.
pub const SHIPMENT_SCHEMA_V2: &str = r#"{"type":"record","name":"Shipment","namespace":"com.example.shop","fields":[{"name":"shipment_id","type":"string"},{"name":"order_id","type":"string"},{"name":"carrier","type":"string"},{"name":"service","type":"string"},{"name":"weight_grams","type":"int"},{"name":"shipped_at","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"destination","type":{"type":"record","name":"Address","fields":[{"name":"street","type":"string"},{"name":"city","type":"string"},{"name":"postcode","type":"string"},{"name":"country","type":"string"}]}},{"name":"skus","type":{"type":"array","items":"string"}},{"name":"tracking_id","type":["null","string"],"default":null},{"name":"express","type":"boolean","default":false},{"name":"notes","type":["null","string"],"default":null}]}"#;

const CARRIERS: &[&str] = &["DHL", "UPS", "FedEx", "PostNL", "DPD", "GLS", "La Poste", "Royal Mail"];

/// Avro `long`/`int`: zig-zag, then base-128 varint (Avro spec "Binary Encoding").
fn avro_long(out: &mut Vec<u8>, n: i64) {
    let mut z = ((n << 1) ^ (n >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Avro `string`: its length as a long, then the UTF-8 bytes.
fn avro_str(out: &mut Vec<u8>, text: &[u8]) {
    avro_long(out, text.len() as i64);
    out.extend_from_slice(text);
}

/// One shipment; `upgraded_percent` of them are written with schema version 2.
fn gen_shipment(rng: &mut Rng, ids: &mut Ids, ts: i64, upgraded_percent: u64, out: &mut Scratch) {
    let mut t = Vec::with_capacity(64);
    ids.order += 1 + rng.below(3);
    let id = ids.order;
    s(&mut out.key, "shp-");
    padded(&mut out.key, id, 10);
    let v2 = rng.percent(upgraded_percent);
    let v = &mut out.value;
    v.push(0); // Confluent magic byte
    v.extend_from_slice(&SHIPMENT_SCHEMA_IDS[usize::from(v2)].to_be_bytes());
    avro_str(v, &out.key);
    s(&mut t, "ord-");
    padded(&mut t, rng.below(10_000_000_000), 10);
    avro_str(v, &t);
    avro_str(v, rng.pick(CARRIERS).as_bytes());
    avro_str(v, rng.pick(SHIPPING).as_bytes());
    avro_long(v, rng.range(50, 30_000) as i64);
    avro_long(v, ts);
    let (country, city, postcode) = COUNTRIES[rng.below(COUNTRIES.len() as u64) as usize];
    t.clear();
    num(&mut t, rng.range(1, 300));
    t.push(b' ');
    s(&mut t, rng.pick(STREETS));
    avro_str(v, &t);
    avro_str(v, city.as_bytes());
    avro_str(v, postcode.as_bytes());
    avro_str(v, country.as_bytes());
    let skus = rng.range(1, 6);
    avro_long(v, skus as i64); // one block of `skus` items, then the empty block
    for _ in 0..skus {
        t.clear();
        s(&mut t, "SKU-");
        padded(&mut t, rng.below(100_000), 5);
        avro_str(v, &t);
    }
    avro_long(v, 0);
    if v2 {
        if rng.percent(80) {
            avro_long(v, 1); // union branch 1: string
            t.clear();
            hex(&mut t, rng.next_u64(), 16);
            avro_str(v, &t);
        } else {
            avro_long(v, 0); // null
        }
        v.push(u8::from(rng.percent(20)));
        if rng.percent(40) {
            avro_long(v, 1);
            t.clear();
            let n = rng.range(3, 30);
            words(&mut t, rng, n);
            avro_str(v, &t);
        } else {
            avro_long(v, 0);
        }
    }
}

/// At most this many headers per generated record.
const MAX_HEADERS: usize = 3;

/// 0-3 headers; picks with replacement, so the same key can come twice.
fn gen_headers(rng: &mut Rng, out: &mut Scratch) {
    let n = match rng.below(100) {
        0..=24 => 0,
        25..=59 => 1,
        60..=84 => 2,
        _ => 3,
    };
    for _ in 0..n {
        let hv = &mut out.header_values;
        let start = hv.len();
        let (key, value) = match rng.below(6) {
            0 => {
                s(hv, "00-");
                hex(hv, rng.next_u64(), 16);
                hex(hv, rng.next_u64(), 16);
                hv.push(b'-');
                hex(hv, rng.next_u64(), 16);
                s(hv, "-01");
                ("traceparent", true)
            }
            1 => {
                s(hv, "application/json");
                ("content-type", true)
            }
            2 => {
                s(hv, rng.pick(HEADER_SOURCES));
                ("source", true)
            }
            3 => ("x-retry", false), // a header with a null value
            4 => {
                s(hv, rng.pick(HEADER_TAGS));
                ("tag", true)
            }
            _ => {
                num(hv, rng.range(1, 5));
                ("schema-version", true)
            }
        };
        out.headers
            .push((key, value.then_some((start, out.header_values.len()))));
    }
}

// ---------------------------------------------------------------------------
// segments and index files
// ---------------------------------------------------------------------------

/// One transaction aborted in a segment (a `.txnindex` entry).
#[derive(Debug, Clone, Copy)]
struct AbortedEntry {
    producer_id: i64,
    first_offset: i64,
    last_offset: i64,
    last_stable_offset: i64,
}

/// What one append (one producer's batch, or a control batch) holds.
#[derive(Debug, Clone, Copy)]
struct AppendMeta {
    first_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
    /// Offset Kafka indexes the max timestamp under (the batch's last offset;
    /// for legacy uncompressed messages, the first message with it).
    offset_of_max_timestamp: i64,
}

#[derive(Debug)]
struct Segment {
    base_offset: i64,
    path: PathBuf,
    file: BufWriter<File>,
    size: u64,
    bytes_since_index_entry: u64,
    offset_index: Vec<u8>,
    time_index: Vec<u8>,
    /// The last time index entry (Kafka starts from (-1, base offset)).
    last_time_entry: i64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    aborted: Vec<AbortedEntry>,
}

fn with_suffix(log: &Path, suffix: &str) -> PathBuf {
    log.with_extension(suffix)
}

impl Segment {
    fn create(dir: &Path, base_offset: i64) -> Result<Segment, GenerateError> {
        let path = dir.join(format!("{base_offset:020}.log"));
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_err(&path))?;
        Ok(Segment {
            base_offset,
            path,
            file: BufWriter::with_capacity(1 << 20, file),
            size: 0,
            bytes_since_index_entry: 0,
            offset_index: Vec::new(),
            time_index: Vec::new(),
            last_time_entry: -1,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            aborted: Vec::new(),
        })
    }

    fn relative(&self, offset: i64) -> [u8; 4] {
        ((offset - self.base_offset) as i32).to_be_bytes()
    }

    fn maybe_append_time_entry(&mut self) {
        if self.max_timestamp > self.last_time_entry {
            self.time_index.extend_from_slice(&self.max_timestamp.to_be_bytes());
            let rel = self.relative(self.offset_of_max_timestamp);
            self.time_index.extend_from_slice(&rel);
            self.last_time_entry = self.max_timestamp;
        }
    }

    /// As Kafka's `LogSegment.append`.
    fn append(&mut self, bytes: &[u8], meta: &AppendMeta, interval: u64) -> Result<(), GenerateError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let position = self.size;
        self.file.write_all(bytes).map_err(io_err(&self.path))?;
        self.size += bytes.len() as u64;
        if meta.max_timestamp > self.max_timestamp {
            self.max_timestamp = meta.max_timestamp;
            self.offset_of_max_timestamp = meta.offset_of_max_timestamp;
        }
        if self.bytes_since_index_entry > interval {
            let rel = self.relative(meta.last_offset);
            self.offset_index.extend_from_slice(&rel);
            self.offset_index.extend_from_slice(&(position as i32).to_be_bytes());
            self.maybe_append_time_entry();
            self.bytes_since_index_entry = 0;
        }
        self.bytes_since_index_entry += bytes.len() as u64;
        Ok(())
    }

    /// Flush the log and write the index files; returns the index bytes written.
    fn close(mut self) -> Result<u64, GenerateError> {
        self.maybe_append_time_entry();
        self.file.flush().map_err(io_err(&self.path))?;
        let mut written = 0u64;
        let mut write = |suffix: &str, data: &[u8]| -> Result<(), GenerateError> {
            let path = with_suffix(&self.path, suffix);
            fs::write(&path, data).map_err(io_err(&path))?;
            written += data.len() as u64;
            Ok(())
        };
        write("index", &self.offset_index)?;
        write("timeindex", &self.time_index)?;
        if !self.aborted.is_empty() {
            let mut txn = Vec::with_capacity(self.aborted.len() * 34);
            for a in &self.aborted {
                txn.extend_from_slice(&0i16.to_be_bytes());
                txn.extend_from_slice(&a.producer_id.to_be_bytes());
                txn.extend_from_slice(&a.first_offset.to_be_bytes());
                txn.extend_from_slice(&a.last_offset.to_be_bytes());
                txn.extend_from_slice(&a.last_stable_offset.to_be_bytes());
            }
            write("txnindex", &txn)?;
        }
        Ok(written)
    }
}

// ---------------------------------------------------------------------------
// producers and the partition generator
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
struct OpenTxn {
    first_offset: i64,
    batches_left: u32,
    abort: bool,
    records: u64,
}

#[derive(Debug, Clone)]
struct Producer {
    id: i64,
    epoch: i16,
    next_sequence: i32,
    txn: Option<OpenTxn>,
}

/// Writes one partition folder; see the module docs.
#[derive(Debug)]
pub struct PartitionGenerator {
    cfg: PartitionConfig,
    rng: Rng,
    ids: Ids,
    scratch: Scratch,
    /// Encoder output, reused batch after batch.
    buf: Vec<u8>,
    segment: Option<Segment>,
    /// A roll is due but waits for open transactions to end.
    roll_pending: bool,
    idempotent: Vec<Producer>,
    transactional: Vec<Producer>,
    coordinator_epoch: i32,
    next_offset: i64,
    timestamp: i64,
    summary: PartitionSummary,
    finished: bool,
}

impl PartitionGenerator {
    /// Check the config, create the folder and the first segment.
    pub fn new(cfg: PartitionConfig) -> Result<PartitionGenerator, GenerateError> {
        let invalid = |argument, reason: String| Err(GenerateError::InvalidConfig { argument, reason });
        if !(0..=2).contains(&cfg.magic) {
            return invalid("magic", format!("{} is not 0, 1 or 2", cfg.magic));
        }
        if cfg.codec == Codec::Zstd && cfg.magic < 2 {
            return invalid("codec", format!("zstd needs magic 2 (magic is {})", cfg.magic));
        }
        if cfg.segment_bytes == 0 || cfg.segment_bytes > i32::MAX as u64 {
            return invalid(
                "segment_bytes",
                format!("{} is not in 1..={}", cfg.segment_bytes, i32::MAX),
            );
        }
        if cfg.partition < 0 {
            return invalid("partition", format!("{} is negative", cfg.partition));
        }
        if cfg.start_timestamp < 0 {
            return invalid("start_timestamp", format!("{} is negative", cfg.start_timestamp));
        }
        if cfg.producer_id_base < 0 || cfg.producer_id_base > i64::MAX / 2 {
            return invalid("producer_id_base", format!("{} is out of range", cfg.producer_id_base));
        }
        fs::create_dir_all(&cfg.dir).map_err(io_err(&cfg.dir))?;
        let mut rng = Rng::new(partition_seed(cfg.seed, &cfg.topic, cfg.partition));
        let v2 = cfg.magic == 2;
        let base = cfg.producer_id_base;
        let idempotent = if v2 {
            (0..2)
                .map(|i| Producer {
                    id: base + i,
                    epoch: rng.below(3) as i16,
                    next_sequence: 0,
                    txn: None,
                })
                .collect()
        } else {
            Vec::new()
        };
        let transactional = if v2 {
            (0..cfg.transactional_producers as i64)
                .map(|i| Producer {
                    id: base + 2 + i,
                    epoch: rng.below(5) as i16,
                    next_sequence: 0,
                    txn: None,
                })
                .collect()
        } else {
            Vec::new()
        };
        let timestamp = cfg.start_timestamp + rng.below(1000) as i64;
        let segment = Segment::create(&cfg.dir, 0)?;
        let ids = Ids {
            order: rng.below(1_000_000) * 1000,
            customer_count: 50_000,
        };
        let coordinator_epoch = rng.below(4) as i32;
        Ok(PartitionGenerator {
            cfg,
            rng,
            ids,
            scratch: Scratch::default(),
            buf: Vec::new(),
            segment: Some(segment),
            roll_pending: false,
            idempotent,
            transactional,
            coordinator_epoch,
            next_offset: 0,
            timestamp,
            summary: PartitionSummary {
                segments: 1,
                first_timestamp: -1,
                last_timestamp: -1,
                ..Default::default()
            },
            finished: false,
        })
    }

    /// Whether the `.log` files reached `target_bytes`.
    pub fn is_done(&self) -> bool {
        self.summary.log_bytes >= self.cfg.target_bytes
    }

    /// The totals so far.
    pub fn summary(&self) -> &PartitionSummary {
        &self.summary
    }

    /// Append batches until about `budget` more bytes are written or the
    /// target is reached. Returns the bytes appended to `.log` files.
    pub fn step(&mut self, budget: u64) -> Result<u64, GenerateError> {
        let start = self.summary.log_bytes;
        while !self.is_done() && self.summary.log_bytes - start < budget.max(1) && !self.finished {
            self.append_one()?;
        }
        Ok(self.summary.log_bytes - start)
    }

    /// End the open transactions (with their markers), close the last
    /// segment and write the checkpoint file. Returns the totals.
    pub fn finish(&mut self) -> Result<PartitionSummary, GenerateError> {
        if self.finished {
            return Ok(self.summary.clone());
        }
        for i in 0..self.transactional.len() {
            if self.transactional[i].txn.is_some() {
                self.write_marker(i)?;
            }
        }
        if let Some(segment) = self.segment.take() {
            self.summary.index_bytes += segment.close()?;
        }
        let path = self.cfg.dir.join("leader-epoch-checkpoint");
        let checkpoint = if self.cfg.magic == 2 { "0\n1\n0 0\n" } else { "0\n0\n" };
        fs::write(&path, checkpoint).map_err(io_err(&path))?;
        self.finished = true;
        self.summary.next_offset = self.next_offset;
        Ok(self.summary.clone())
    }

    /// One producer's append: a data batch or a transaction marker.
    fn append_one(&mut self) -> Result<(), GenerateError> {
        if self.cfg.magic < 2 {
            return self.write_data(None, false);
        }
        // While a roll waits, push the open transactions to their end.
        if self.roll_pending {
            if let Some(i) = self.transactional.iter().position(|p| p.txn.is_some()) {
                return self.advance_txn(i);
            }
        }
        let roll = self.rng.below(100);
        if !self.transactional.is_empty() && roll < 30 {
            let i = self.rng.below(self.transactional.len() as u64) as usize;
            if self.transactional[i].txn.is_some() || !self.roll_pending {
                return self.advance_txn(i);
            }
        }
        if roll >= 95 {
            // An old client without idempotence.
            return self.write_data(None, false);
        }
        let i = self.rng.below(self.idempotent.len() as u64) as usize;
        self.write_data(Some(i), false)
    }

    /// Start, continue or end transactional producer `i`'s transaction.
    fn advance_txn(&mut self, i: usize) -> Result<(), GenerateError> {
        match self.transactional[i].txn {
            None => {
                let batches = self.rng.range(1, 3) as u32;
                let abort = self.rng.percent(30);
                self.transactional[i].txn = Some(OpenTxn {
                    first_offset: self.next_offset,
                    batches_left: batches,
                    abort,
                    records: 0,
                });
                self.write_data(Some(i), true)
            }
            Some(t) if t.batches_left > 0 => self.write_data(Some(i), true),
            Some(_) => self.write_marker(i),
        }
    }

    fn data_options(&self, producer: Option<&Producer>, transactional: bool) -> EncodeOptions {
        let v2 = self.cfg.magic == 2;
        EncodeOptions {
            magic: self.cfg.magic,
            codec: self.cfg.codec,
            compress: self.cfg.compress,
            base_offset: self.next_offset,
            records_per_batch: None,
            max_batch_bytes: None,
            producer_id: producer.map_or(-1, |p| p.id),
            producer_epoch: producer.map_or(-1, |p| p.epoch),
            base_sequence: producer.map_or(-1, |p| p.next_sequence),
            transactional,
            partition_leader_epoch: if v2 { 0 } else { -1 },
            ..EncodeOptions::default()
        }
    }

    /// A batch of records from producer `producer` (an index into the
    /// transactional or idempotent producers), or from a plain producer.
    fn write_data(&mut self, producer: Option<usize>, transactional: bool) -> Result<(), GenerateError> {
        let p = producer.map(|i| {
            if transactional {
                &self.transactional[i]
            } else {
                &self.idempotent[i]
            }
        });
        let opts = self.data_options(p, transactional);
        let (lo, hi) = self.cfg.kind.records_per_batch();
        let count = self.rng.range(lo, hi);
        let mut enc = Encoder::with_buffer(&opts, std::mem::take(&mut self.buf))?;
        let kind = self.cfg.kind;
        let magic = self.cfg.magic;
        let gap = kind.mean_gap_ms() * 2 + 1;
        let mut uncompressed = 0u64;
        let mut max_ts = -1i64;
        let mut offset_of_max = self.next_offset;
        let mut pushed = 0u64;
        while pushed < count && (pushed == 0 || uncompressed < self.cfg.batch_bytes) {
            self.timestamp += self.rng.below(gap) as i64;
            let ts = self.timestamp;
            gen_record(kind, magic, &mut self.rng, &mut self.ids, ts, &mut self.scratch);
            let sc = &self.scratch;
            let header_refs: [HeaderRef<'_>; MAX_HEADERS] = std::array::from_fn(|j| match sc.headers.get(j) {
                Some(&(k, v)) => (k, v.map(|(a, b)| &sc.header_values[a..b])),
                None => ("", None),
            });
            let record = RecordRef {
                key: (!sc.key_null).then_some(&sc.key[..]),
                value: (!sc.value_null).then_some(&sc.value[..]),
                timestamp: ts,
                headers: &header_refs[..sc.headers.len()],
            };
            enc.push(&record)?;
            uncompressed += (sc.key.len() + sc.value.len() + sc.header_values.len() + 12) as u64;
            self.summary.tombstones += u64::from(sc.value_null);
            self.summary.null_keys += u64::from(sc.key_null);
            if ts > max_ts {
                max_ts = ts;
                offset_of_max = self.next_offset + pushed as i64;
            }
            pushed += 1;
        }
        let (buf, summary) = enc.finish()?;
        let last_offset = summary.next_offset - 1;
        let legacy_plain = magic < 2 && self.cfg.codec == Codec::None;
        let meta = AppendMeta {
            first_offset: opts.base_offset,
            last_offset,
            max_timestamp: if magic == 0 { -1 } else { max_ts },
            offset_of_max_timestamp: if legacy_plain { offset_of_max } else { last_offset },
        };
        self.buf = buf;
        if let Some(i) = producer {
            let p = if transactional {
                &mut self.transactional[i]
            } else {
                &mut self.idempotent[i]
            };
            p.next_sequence = summary.next_sequence;
            if let Some(t) = &mut p.txn {
                t.batches_left -= 1;
                t.records += summary.records;
            }
        }
        self.summary.records += summary.records;
        self.summary.batches += summary.batches;
        self.next_offset = summary.next_offset;
        self.note_timestamp(max_ts);
        self.append_buf(&meta)
    }

    /// The COMMIT or ABORT marker ending transactional producer `i`'s transaction.
    fn write_marker(&mut self, i: usize) -> Result<(), GenerateError> {
        let Some(t) = self.transactional[i].txn else {
            return Ok(());
        };
        let (id, epoch) = (self.transactional[i].id, self.transactional[i].epoch);
        let offset = self.next_offset;
        self.timestamp += self.rng.below(5) as i64;
        let ts = self.timestamp;
        let kind = if t.abort {
            ControlKind::Abort
        } else {
            ControlKind::Commit
        };
        self.buf.clear();
        control_batch(kind, id, epoch, offset, self.coordinator_epoch, ts, 0, &mut self.buf);
        // Appended while the transaction still counts as open, so a due roll
        // waits and the marker lands in the segment of its transaction.
        self.append_buf(&AppendMeta {
            first_offset: offset,
            last_offset: offset,
            max_timestamp: ts,
            offset_of_max_timestamp: offset,
        })?;
        self.transactional[i].txn = None;
        if t.abort {
            // Kafka's ProducerStateManager.lastStableOffset: the first offset of
            // the earliest other open transaction, else just past the marker.
            let lso = self
                .transactional
                .iter()
                .filter_map(|q| q.txn.map(|o| o.first_offset))
                .min()
                .unwrap_or(offset + 1);
            let entry = AbortedEntry {
                producer_id: id,
                first_offset: t.first_offset,
                last_offset: offset,
                last_stable_offset: lso,
            };
            if let Some(seg) = &mut self.segment {
                seg.aborted.push(entry);
            }
            self.summary.aborted_records += t.records;
            self.summary.aborted_transactions += 1;
        } else {
            self.summary.committed_records += t.records;
            self.summary.committed_transactions += 1;
        }
        self.next_offset += 1;
        self.summary.batches += 1;
        self.summary.control_batches += 1;
        self.note_timestamp(ts);
        Ok(())
    }

    fn note_timestamp(&mut self, ts: i64) {
        if self.summary.first_timestamp < 0 {
            self.summary.first_timestamp = ts;
        }
        self.summary.last_timestamp = self.summary.last_timestamp.max(ts);
    }

    /// Append `self.buf` to the current segment, rolling first when it is full
    /// (and no transaction is open).
    fn append_buf(&mut self, meta: &AppendMeta) -> Result<(), GenerateError> {
        let len = self.buf.len() as u64;
        let full = self
            .segment
            .as_ref()
            .is_some_and(|s| s.size > 0 && s.size + len > self.cfg.segment_bytes);
        if full {
            let open = self.transactional.iter().any(|p| p.txn.is_some());
            if open {
                self.roll_pending = true;
            } else {
                if let Some(old) = self.segment.take() {
                    self.summary.index_bytes += old.close()?;
                }
                self.segment = Some(Segment::create(&self.cfg.dir, meta.first_offset)?);
                self.summary.segments += 1;
                self.roll_pending = false;
            }
        }
        let interval = self.cfg.index_interval_bytes;
        let Some(seg) = self.segment.as_mut() else {
            unreachable!("a segment is open until finish")
        };
        seg.append(&self.buf, meta, interval)?;
        self.summary.log_bytes += len;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode, DecodeOptions, Isolation};

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kafkabatch-gen-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn read_logs(dir: &Path) -> Vec<u8> {
        let mut logs: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        logs.sort();
        logs.iter().flat_map(|p| fs::read(p).unwrap()).collect()
    }

    fn run(cfg: PartitionConfig) -> PartitionSummary {
        let mut g = PartitionGenerator::new(cfg).unwrap();
        while !g.is_done() {
            g.step(1 << 20).unwrap();
        }
        g.finish().unwrap()
    }

    #[test]
    fn helpers_format_like_json() {
        let mut out = Vec::new();
        iso_time(&mut out, 1_793_491_200_000 + 3_723_004);
        assert_eq!(out, b"2026-11-01T01:02:03.004Z");
        out.clear();
        money(&mut out, 12_305);
        out.push(b' ');
        padded(&mut out, 42, 6);
        out.push(b' ');
        hex(&mut out, 0xabc, 4);
        out.push(b' ');
        num(&mut out, 0);
        assert_eq!(out, b"123.05 000042 0abc 0");
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn partitions_decode_back_with_the_summary_counts() {
        for (magic, kind) in [
            (2i8, Kind::Orders),
            (2, Kind::Customers),
            (1, Kind::Audit),
            (0, Kind::Events),
        ] {
            let dir = temp_dir(&format!("m{magic}-{}", kind.name()));
            let mut cfg = PartitionConfig::new(&dir, kind.name(), 0, kind);
            cfg.magic = magic;
            cfg.target_bytes = 600_000;
            cfg.segment_bytes = 100_000;
            let summary = run(cfg);
            assert!(summary.segments >= 5, "{summary:?}");
            let data = read_logs(&dir);
            assert_eq!(data.len() as u64, summary.log_bytes);
            let opts = DecodeOptions::default();
            let all = decode(&data, None, None, &opts).unwrap();
            assert_eq!(all.records as u64, summary.records);
            let committed = DecodeOptions {
                isolation: Isolation::ReadCommitted {
                    aborted: None,
                    hide_open: true,
                },
                ..DecodeOptions::default()
            };
            let visible = decode(&data, None, None, &committed).unwrap();
            assert_eq!(visible.records as u64, summary.records - summary.aborted_records);
            if magic == 2 {
                assert!(
                    summary.aborted_transactions > 0 && summary.committed_transactions > 0,
                    "{summary:?}"
                );
            } else {
                assert_eq!(summary.control_batches, 0);
            }
            if kind == Kind::Customers {
                assert!(summary.tombstones > 0);
            }
            fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn the_same_seed_writes_the_same_bytes() {
        let write = |name: &str, seed: u64| {
            let dir = temp_dir(name);
            let mut cfg = PartitionConfig::new(&dir, "orders", 1, Kind::Orders);
            cfg.seed = seed;
            cfg.target_bytes = 200_000;
            run(cfg);
            let data = read_logs(&dir);
            fs::remove_dir_all(&dir).unwrap();
            data
        };
        assert_eq!(write("seed-a", 7), write("seed-b", 7));
        assert_ne!(write("seed-c", 7), write("seed-d", 8));
    }

    /// `cargo test --release generate::tests::speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn speed() {
        for kind in Kind::ALL {
            let dir = temp_dir(&format!("speed-{}", kind.name()));
            let mut cfg = PartitionConfig::new(&dir, kind.name(), 0, kind);
            cfg.target_bytes = 256 << 20;
            cfg.segment_bytes = 64 << 20;
            let t = std::time::Instant::now();
            let summary = run(cfg);
            let secs = t.elapsed().as_secs_f64();
            println!(
                "{:10} {:8.1} MB/s ({} records)",
                kind.name(),
                summary.log_bytes as f64 / 1e6 / secs,
                summary.records
            );
            fs::remove_dir_all(&dir).unwrap();
        }
    }
}
