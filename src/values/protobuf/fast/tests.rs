//! The fast path against prost-reflect's `DynamicMessage` (the slow
//! path) on random wire messages: fields in any order, repeated,
//! packed and unpacked, unknown (groups too), in the wrong wire type,
//! truncated, with bad UTF-8.
use super::super::{compile, ProtoSource, Protobuf};
use arrow_array::Array;
use proptest::prelude::*;
use prost_reflect::{Kind, MessageDescriptor};

const SCHEMA: &str = include_str!("every_shape.proto");

const PROTO2: &str = r#"
    syntax = "proto2";
    package fz2;
    enum E { A = 3; B = 4; }
    message P {
        optional int32 a = 1 [default = 7]; required string b = 2; optional E e = 3;
        repeated int32 r = 4 [packed = true]; map<string, E> m = 5; repeated sint32 u = 6;
        optional P p = 7;
    }
"#;

/// A small deterministic generator (xorshift), seeded by proptest.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn tag(out: &mut Vec<u8>, number: u32, wire: u8) {
    varint(out, (u64::from(number) << 3) | u64::from(wire));
}

fn delimited(out: &mut Vec<u8>, bytes: &[u8]) {
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A varint-ish number: small mostly, sometimes huge or negative.
fn number(rng: &mut Rng) -> u64 {
    match rng.below(6) {
        0 => rng.below(3),
        1 => rng.below(300),
        2 => rng.next(),
        3 => (-(rng.below(1000) as i64)) as u64,
        4 => rng.below(1 << 33),
        _ => rng.below(10),
    }
}

fn text(rng: &mut Rng, bad_utf8: bool) -> Vec<u8> {
    let pieces: [&[u8]; 6] = [b"a", b"zz", "é".as_bytes(), "日本".as_bytes(), b"", b"k1"];
    let mut out = Vec::new();
    for _ in 0..rng.below(4) {
        out.extend_from_slice(pieces[rng.below(6) as usize]);
    }
    if bad_utf8 && rng.chance(20) {
        out.push(0xff);
    }
    out
}

/// One value of `kind` in its own wire type (without the tag).
fn value(rng: &mut Rng, kind: &Kind, out: &mut Vec<u8>, depth: u32, top: bool) {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => out.extend_from_slice(&number(rng).to_le_bytes()),
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => out.extend_from_slice(&(number(rng) as u32).to_le_bytes()),
        Kind::String => delimited(out, &text(rng, top)),
        Kind::Bytes => delimited(out, &text(rng, false)),
        Kind::Message(m) => {
            let inner = message(rng, m, depth + 1);
            delimited(out, &inner)
        }
        Kind::Enum(_) => varint(out, [0, 1, 5, 3, 4, 9][rng.below(6) as usize]),
        _ => varint(out, number(rng)),
    }
}

/// A payload of wire type `wire` that is well formed as such.
fn any_of_wire(rng: &mut Rng, wire: u8, number: u32, out: &mut Vec<u8>, depth: u32) {
    match wire {
        0 => varint(out, rng.next() >> rng.below(64)),
        1 => out.extend_from_slice(&rng.next().to_le_bytes()),
        5 => out.extend_from_slice(&(rng.next() as u32).to_le_bytes()),
        3 => {
            for _ in 0..rng.below(3) {
                let inner = 1 + rng.below(20) as u32;
                let w = [0u8, 1, 2, 5, 3][rng.below(if depth < 3 { 5 } else { 4 }) as usize];
                tag(out, inner, w);
                any_of_wire(rng, w, inner, out, depth + 1);
            }
            tag(out, number, 4);
        }
        _ => delimited(out, &text(rng, false)),
    }
}

fn wire_of(kind: &Kind) -> u8 {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => 1,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => 5,
        Kind::String | Kind::Bytes | Kind::Message(_) => 2,
        _ => 0,
    }
}

/// A random encoding of `message`: random fields in random order,
/// repeated, packed or not, unknown ones, now and then a wrong wire type.
fn message(rng: &mut Rng, message: &MessageDescriptor, depth: u32) -> Vec<u8> {
    let fields: Vec<_> = message.fields().collect();
    let mut out = Vec::new();
    let count = if depth > 3 {
        0
    } else {
        rng.below(if depth == 0 { 14 } else { 5 })
    };
    for _ in 0..count {
        if rng.chance(8) {
            let unknown = 1000 + rng.below(50) as u32;
            let wire = [0u8, 1, 2, 5, 3][rng.below(5) as usize];
            tag(&mut out, unknown, wire);
            any_of_wire(rng, wire, unknown, &mut out, depth);
            continue;
        }
        let field = &fields[rng.below(fields.len() as u64) as usize];
        let number = field.number();
        let kind = field.kind();
        if field.is_map() {
            let Kind::Message(entry) = &kind else { unreachable!() };
            let (k, v) = (entry.map_entry_key_field(), entry.map_entry_value_field());
            let mut body = Vec::new();
            for _ in 0..rng.below(4) {
                match rng.below(5) {
                    0 | 1 => {
                        tag(&mut body, 1, wire_of(&k.kind()));
                        // Few distinct keys, so that some repeat.
                        let mut key = Vec::new();
                        value(rng, &k.kind(), &mut key, depth, false);
                        if rng.chance(60) {
                            key = match k.kind() {
                                Kind::String => vec![1, b'a' + rng.below(3) as u8],
                                _ => vec![rng.below(3) as u8],
                            };
                        }
                        body.extend_from_slice(&key);
                    }
                    2 | 3 => {
                        tag(&mut body, 2, wire_of(&v.kind()));
                        value(rng, &v.kind(), &mut body, depth, false);
                    }
                    _ => {
                        tag(&mut body, 9, 0);
                        varint(&mut body, 1);
                    }
                }
            }
            tag(&mut out, number, 2);
            delimited(&mut out, &body);
            continue;
        }
        let right = wire_of(&kind);
        if rng.chance(3) {
            // The wrong wire type (but well formed as such).
            let wire = [0u8, 1, 2, 5][rng.below(4) as usize];
            tag(&mut out, number, wire);
            any_of_wire(rng, wire, number, &mut out, depth);
            continue;
        }
        if field.is_list() && right != 2 && rng.chance(50) {
            let mut body = Vec::new();
            for _ in 0..rng.below(4) {
                value(rng, &kind, &mut body, depth, depth == 0);
            }
            tag(&mut out, number, 2);
            delimited(&mut out, &body);
            continue;
        }
        tag(&mut out, number, right);
        value(rng, &kind, &mut out, depth, depth == 0);
    }
    if depth == 0 && rng.chance(4) && !out.is_empty() {
        out.truncate(rng.below(out.len() as u64) as usize);
    }
    out
}

fn both(files: &[(String, ProtoSource)], name: &str) -> (Protobuf, Protobuf, MessageDescriptor) {
    let fast = Protobuf::plain(files, name, 2).unwrap();
    assert!(fast.fast, "{name} goes the fast way");
    let slow = Protobuf {
        fast: false,
        ..fast.clone()
    };
    let (pool, _) = compile(files).unwrap();
    (fast, slow, pool.get_message_by_name(name).unwrap())
}

fn run(format: &Protobuf, values: &[Vec<u8>]) -> Vec<Result<arrow_array::ArrayRef, String>> {
    values
        .iter()
        .map(|v| {
            let mut sink = format.sink(1)?;
            sink.push(v)?;
            sink.finish()
        })
        .collect()
}

fn check(files: &[(String, ProtoSource)], name: &str, seed: u64) -> Result<(), TestCaseError> {
    let (fast, slow, descriptor) = both(files, name);
    let mut rng = Rng(seed | 1);
    let values: Vec<Vec<u8>> = (0..4).map(|_| message(&mut rng, &descriptor, 0)).collect();
    let (f, s) = (run(&fast, &values), run(&slow, &values));
    let mut good = Vec::new();
    for ((f, s), v) in f.iter().zip(&s).zip(&values) {
        match (f, s) {
            (Ok(f), Ok(s)) => {
                prop_assert_eq!(f.to_data(), s.to_data(), "value {:?}", v);
                good.push(v.clone());
            }
            (Err(_), Err(_)) => {}
            (f, s) => prop_assert!(
                false,
                "fast {:?} but slow {:?} for {:?}",
                f.as_ref().err(),
                s.as_ref().err(),
                v
            ),
        }
    }
    // The rows together: list and map offsets across rows.
    let (f, s) = (fast.sink(good.len()), slow.sink(good.len()));
    let (mut f, mut s) = (f.unwrap(), s.unwrap());
    for v in &good {
        f.push(v).unwrap();
        s.push(v).unwrap();
    }
    let (f, s) = (f.finish().unwrap(), s.finish().unwrap());
    prop_assert_eq!(f.len(), good.len());
    prop_assert_eq!(f.to_data(), s.to_data());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn the_fast_path_reads_what_dynamic_message_reads(seed in any::<u64>()) {
        check(&[("fz.proto".into(), ProtoSource::Text(SCHEMA.into()))], "fz.All", seed)?;
    }

    #[test]
    fn proto2_defaults_and_closed_enums_read_the_same(seed in any::<u64>()) {
        check(&[("fz2.proto".into(), ProtoSource::Text(PROTO2.into()))], "fz2.P", seed)?;
    }
}

#[test]
fn groups_and_extensions_keep_the_dynamic_message_path() {
    let proto = r#"
        syntax = "proto2";
        package g;
        message G { optional group Item = 1 { optional int32 x = 2; } }
        message X { optional int32 a = 1; extensions 100 to 200; }
        extend X { optional int32 more = 100; }
    "#;
    let files = vec![("g.proto".into(), ProtoSource::Text(proto.into()))];
    assert!(!Protobuf::plain(&files, "g.G", 3).unwrap().fast);
    assert!(!Protobuf::plain(&files, "g.X", 3).unwrap().fast);
    // The group is read (x = 5) through DynamicMessage.
    let format = Protobuf::plain(&files, "g.G", 3).unwrap();
    let mut sink = format.sink(1).unwrap();
    sink.push(&[0x0b, 0x10, 0x05, 0x0c]).unwrap();
    let out = sink.finish().unwrap();
    assert_eq!(out.len(), 1);
    assert!(!out.is_null(0));
}

#[test]
fn deep_groups_and_messages_hit_the_recursion_limit() {
    let files = vec![("fz.proto".into(), ProtoSource::Text(SCHEMA.into()))];
    let (fast, slow, _) = both(&files, "fz.All");
    for levels in [99usize, 100, 101, 150] {
        let mut groups = Vec::new();
        for _ in 0..levels {
            tag(&mut groups, 1000, 3);
        }
        for _ in 0..levels {
            tag(&mut groups, 1000, 4);
        }
        let (f, s) = (run(&fast, &[groups.clone()]), run(&slow, &[groups]));
        assert_eq!(f[0].is_ok(), s[0].is_ok(), "{levels} nested groups");
    }
    // Unknown-field groups that end wrong or never end fail as they do in prost.
    for bad in [vec![0x0b], vec![0x0b, 0x14], vec![0x0c], vec![0x0b, 0x0b, 0x0c]] {
        let (f, s) = (
            run(&fast, std::slice::from_ref(&bad)),
            run(&slow, std::slice::from_ref(&bad)),
        );
        assert!(f[0].is_err() && s[0].is_err(), "{bad:?}");
    }
}
