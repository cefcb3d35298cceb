//! The binary report: base64 of a serialized `xds.data.orca.v3.OrcaLoadReport`, read by walking
//! its protobuf fields for the one metric asked for, with no message decoded: decoding the
//! whole report (prost) builds three maps of owned strings per answer, ~2.5× the cost of this
//! walk, and a gRPC cluster balancing on reports reads one on every answer.
//!
//! Field numbers from `xds/data/orca/v3/orca_load_report.proto`: `cpu_utilization` 1,
//! `mem_utilization` 2 (doubles), `rps` 3 (deprecated varint), `request_cost` 4, `utilization`
//! 5, `named_metrics` 8 (`map<string, double>`: entries are messages of key 1 and value 2),
//! `rps_fractional` 6, `eps` 7, `application_utilization` 9 (doubles). As protobuf decoding
//! would: the last occurrence of a field or map key wins, and an absent scalar is 0.

use base64::Engine as _;

use super::{Field, MetricName};

/// Decoded reports longer than this are not read (the base64 header is bounded before).
const MAX_DECODED: usize = 6 * 1024;

const WIRE_VARINT: u64 = 0;
const WIRE_FIXED64: u64 = 1;
const WIRE_LEN: u64 = 2;
const WIRE_FIXED32: u64 = 5;

/// `metric` from the base64 (padded or not, as gRPC binary metadata comes) report.
pub(super) fn metric(b64: &[u8], metric: &MetricName) -> Option<f64> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
    let trimmed = b64.trim_ascii();
    let mut buf = [0u8; MAX_DECODED];
    let n = STANDARD
        .decode_slice(trimmed, &mut buf)
        .or_else(|_| STANDARD_NO_PAD.decode_slice(trimmed, &mut buf))
        .ok()?;
    find(buf.get(..n)?, metric)
}

fn find(mut msg: &[u8], metric: &MetricName) -> Option<f64> {
    let (scalar, map, key) = match metric {
        MetricName::Field(f) => (Some(field_number(*f)), 0, ""),
        MetricName::RequestCost(k) => (None, 4, k.as_str()),
        MetricName::Utilization(k) => (None, 5, k.as_str()),
        MetricName::Named(k) => (None, 8, k.as_str()),
    };
    let mut found = scalar.map(|_| 0.0);
    while !msg.is_empty() {
        let (number, wire) = tag(&mut msg)?;
        match wire {
            WIRE_FIXED64 => {
                let v = fixed64(&mut msg)?;
                if Some(number) == scalar {
                    found = Some(v);
                }
            }
            WIRE_LEN => {
                let len = usize::try_from(varint(&mut msg)?).ok()?;
                let (body, rest) = (msg.get(..len)?, msg.get(len..)?);
                msg = rest;
                if number == map
                    && let Some(v) = entry(body, key)?
                {
                    found = Some(v);
                }
            }
            WIRE_VARINT => {
                varint(&mut msg)?;
            }
            WIRE_FIXED32 => msg = msg.get(4..)?,
            _ => return None,
        }
    }
    found
}

/// A map entry's value when its key is `key` (`Some(None)`: another key; `None`: malformed).
fn entry(mut msg: &[u8], key: &str) -> Option<Option<f64>> {
    let (mut matched, mut value) = (false, 0.0);
    while !msg.is_empty() {
        let (number, wire) = tag(&mut msg)?;
        match (number, wire) {
            (1, WIRE_LEN) => {
                let len = usize::try_from(varint(&mut msg)?).ok()?;
                matched = msg.get(..len)? == key.as_bytes();
                msg = msg.get(len..)?;
            }
            (2, WIRE_FIXED64) => value = fixed64(&mut msg)?,
            (_, WIRE_FIXED64) => {
                fixed64(&mut msg)?;
            }
            (_, WIRE_LEN) => {
                let len = usize::try_from(varint(&mut msg)?).ok()?;
                msg = msg.get(len..)?;
            }
            (_, WIRE_VARINT) => {
                varint(&mut msg)?;
            }
            (_, WIRE_FIXED32) => msg = msg.get(4..)?,
            _ => return None,
        }
    }
    Some(matched.then_some(value))
}

fn field_number(f: Field) -> u64 {
    match f {
        Field::CpuUtilization => 1,
        Field::MemUtilization => 2,
        Field::RpsFractional => 6,
        Field::Eps => 7,
        Field::ApplicationUtilization => 9,
    }
}

/// A field's number and wire type; field number 0 is invalid.
fn tag(msg: &mut &[u8]) -> Option<(u64, u64)> {
    let t = varint(msg)?;
    let number = t >> 3;
    (number != 0).then_some((number, t & 7))
}

fn varint(msg: &mut &[u8]) -> Option<u64> {
    let mut out = 0u64;
    for i in 0..10 {
        let (&b, rest) = msg.split_first()?;
        *msg = rest;
        out |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(out);
        }
    }
    None
}

fn fixed64(msg: &mut &[u8]) -> Option<f64> {
    let (bytes, rest) = msg.split_first_chunk::<8>()?;
    *msg = rest;
    Some(f64::from_le_bytes(*bytes))
}
