//! `cargo xtask bench codec`: the schemas crate's hand-written Avro codec against upstream
//! (issue 23, item 4). Encode and decode of every event type, no broker, by each route:
//!
//! - `ours`: `Event::encode` / `Event::decode` (the direct encoder, the scan, the direct decoder);
//! - `avro021_value`: apache-avro 0.21 (the workspace's) through its value tree: `to_value`
//!   (resolved against the schema when the tree does not validate as it is), `to_avro_datum`;
//!   `from_avro_datum`, `from_value`;
//! - `avro021_serde`: apache-avro 0.21's schema-aware serializer (`write_avro_datum_ref`),
//!   encode only (0.21 has no such deserializer);
//! - `avro022_serde`: apache-avro 0.22's serde route, no value tree: `GenericDatumWriter::
//!   write_ser`, `GenericDatumReader::read_deser`, with the schema parsed by 0.22 from the same
//!   `.avsc` text;
//! - `serde_avro_fast`: `to_datum` (its serializer config reused, as its docs advise) and
//!   `from_datum_slice`.
//!
//! Every route writes and reads the same single-object bytes (`0xC3 0x01`, the fingerprint,
//! the body): the upstream routes write the 10-byte header and the body into one fresh
//! `Vec` per record, as `Event::encode` does, and check the header before reading the body.
//! Upstream readers do not check for trailing bytes or bound allocation by the input as
//! `ours` does (its scan), except `avro021_value` and `avro022_serde`, whose trailing-byte check
//! is added here. Before timing, each route's bytes must equal ours and its decode of our
//! bytes must equal the event; a route that fails either is reported (`note`), not timed.
//!
//! The values are the schemas' deterministic samples (`schemas/tests/support`, as the
//! `framing` bench uses). Each figure is the best of `--rounds` runs of `--records` records.
//! Lines: `{"bench":"codec","metric":"encode_per_s"|"decode_per_s","value":..,"unit":"ops/s",
//! "type":"CallEvent","route":"ours"}`, then per type and upstream route the ratios
//! `<route>_over_ours_encode` / `_decode`, and the same for the mix of the events that matter
//! (`type":"hot"`: CallEvent, LaunchCommand, CallLaunch) and of all 16 (`"type":"all"`).

use std::time::{Duration, Instant};

use anyhow::{anyhow, ensure, Context, Result};
use apache_avro_022 as avro022;
use callstream_schemas::{decode_any, header, AnyEvent, Event, EventKind, HEADER_LEN};
use clap::Parser;
use serde::Serialize;

#[path = "../../../schemas/tests/support/mod.rs"]
#[allow(dead_code, clippy::all)]
mod support;

/// Encode and decode of every event type by our codec and by upstream's.
#[derive(Debug, Parser)]
#[command(name = "codec")]
struct Args {
    /// Records encoded (and decoded) per event type, route and run.
    #[arg(long, default_value_t = 200_000)]
    records: u32,
    /// Runs of each measurement; the best counts.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Only these event types (names as `CallEvent`); all 16 by default.
    #[arg(long, value_delimiter = ',')]
    types: Vec<String>,
}

/// The routes, in the order they are printed.
const ROUTES: [&str; 5] = [
    "ours",
    "avro021_value",
    "avro021_serde",
    "avro022_serde",
    "serde_avro_fast",
];

/// The events that matter (issue 23): call events, launch commands, the detector's inputs.
const HOT: [EventKind; 3] = [
    EventKind::CallEvent,
    EventKind::LaunchCommand,
    EventKind::CallLaunch,
];

/// One result line: [`callstream_bench::report`]'s four fields, then the type and route.
#[derive(Serialize)]
struct Line<'a> {
    bench: &'static str,
    metric: &'a str,
    value: f64,
    unit: &'a str,
    #[serde(rename = "type")]
    event_type: &'a str,
    route: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'a str>,
}

fn emit(metric: &str, value: f64, unit: &str, event_type: &str, route: &str) -> Result<()> {
    ensure!(value.is_finite(), "{event_type}/{route}/{metric}: {value}");
    let line = Line {
        bench: "codec",
        metric,
        value: (value * 1000.0).round() / 1000.0,
        unit,
        event_type,
        route,
        note: None,
    };
    println!("{}", serde_json::to_string(&line)?);
    tracing::info!(metric, value, event_type, route, "result");
    Ok(())
}

fn emit_note(metric: &str, event_type: &str, route: &str, note: &str) -> Result<()> {
    let line = Line {
        bench: "codec",
        metric,
        value: 0.0,
        unit: "none",
        event_type,
        route,
        note: Some(note),
    };
    println!("{}", serde_json::to_string(&line)?);
    tracing::warn!(metric, event_type, route, note, "not measured");
    Ok(())
}

/// Best rate (ops/s) of `rounds` runs of `n` calls of `f`.
fn best_rate<T>(n: u32, rounds: u32, mut f: impl FnMut() -> Result<T>) -> Result<f64> {
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(f()?);
        }
        best = best.min(start.elapsed());
    }
    Ok(f64::from(n) / best.as_secs_f64())
}

/// The body of single-object bytes, if their header is `expected`.
fn body<'a>(bytes: &'a [u8], expected: &[u8; HEADER_LEN]) -> Result<&'a [u8]> {
    ensure!(
        bytes.len() >= HEADER_LEN && bytes[..HEADER_LEN] == expected[..],
        "not single-object bytes of this type"
    );
    Ok(&bytes[HEADER_LEN..])
}

fn framed(expected: &[u8; HEADER_LEN]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(expected);
    out
}

/// Encode/s and decode/s of one route on one type; `Err` says why it was not timed.
type Measured = (Result<f64, String>, Result<f64, String>);

/// An event into single-object bytes.
type Encoder<'a, E> = Box<dyn FnMut(&E) -> Result<Vec<u8>> + 'a>;
/// Single-object bytes back into an event.
type Decoder<'a, E> = Box<dyn FnMut(&[u8]) -> Result<E> + 'a>;

/// One route: encodes an event into single-object bytes, decodes them back.
struct Route<'a, E> {
    encode: Option<Encoder<'a, E>>,
    decode: Option<Decoder<'a, E>>,
    /// Why the route has no encoder or decoder.
    missing: &'static str,
}

fn measure<E: Event>(event: &E, ours: &[u8], route: Route<'_, E>, args: &Args) -> Measured {
    let Route {
        encode,
        decode,
        missing,
    } = route;
    let encode = match encode {
        None => Err(missing.to_string()),
        Some(mut encode) => (|| {
            let bytes = encode(event).map_err(|e| format!("encode failed: {e:#}"))?;
            if bytes != ours {
                let back = E::decode(&bytes)
                    .map_err(|e| format!("bytes differ from ours and do not decode: {e}"))?;
                if back != *event {
                    return Err("bytes differ from ours and decode to another event".into());
                }
            }
            best_rate(args.records, args.rounds, || {
                encode(std::hint::black_box(event))
            })
            .map_err(|e| format!("{e:#}"))
        })(),
    };
    let decode = match decode {
        None => Err(missing.to_string()),
        Some(mut decode) => (|| {
            let back = decode(ours).map_err(|e| format!("decode failed: {e:#}"))?;
            if back != *event {
                return Err("decodes our bytes into another event".into());
            }
            best_rate(args.records, args.rounds, || {
                decode(std::hint::black_box(ours))
            })
            .map_err(|e| format!("{e:#}"))
        })(),
    };
    (encode, decode)
}

/// Every route on `event`, in [`ROUTES`] order.
fn bench_type<E: Event>(event: &E, args: &Args) -> Result<Vec<Measured>> {
    let kind = E::KIND;
    let ours = event.encode()?;
    ensure!(E::decode(&ours)? == *event, "{kind:?} does not round-trip");
    let expected = header(kind.fingerprint());
    let mut all = Vec::with_capacity(ROUTES.len());

    all.push(measure(
        event,
        &ours,
        Route {
            encode: Some(Box::new(|e: &E| Ok(e.encode()?))),
            decode: Some(Box::new(|b: &[u8]| Ok(E::decode(b)?))),
            missing: "",
        },
        args,
    ));

    // apache-avro 0.21, the value tree.
    let schema21 = kind.schema();
    let resolve = !apache_avro::to_value(event)?.validate(schema21);
    all.push(measure(
        event,
        &ours,
        Route {
            encode: Some(Box::new(|e: &E| {
                let mut value = apache_avro::to_value(e)?;
                if resolve {
                    value = value.resolve(schema21)?;
                }
                let mut out = framed(&expected);
                out.extend_from_slice(&apache_avro::to_avro_datum(schema21, value)?);
                Ok(out)
            })),
            decode: Some(Box::new(|b: &[u8]| {
                let mut rest = body(b, &expected)?;
                let value = apache_avro::from_avro_datum(schema21, &mut rest, None)?;
                ensure!(rest.is_empty(), "{} trailing bytes", rest.len());
                Ok(apache_avro::from_value(&value)?)
            })),
            missing: "",
        },
        args,
    ));

    // apache-avro 0.21, its schema-aware serializer (encode only).
    all.push(measure(
        event,
        &ours,
        Route {
            encode: Some(Box::new(|e: &E| {
                let mut out = framed(&expected);
                apache_avro::write_avro_datum_ref(schema21, e, &mut out)?;
                Ok(out)
            })),
            decode: None,
            missing: "apache-avro 0.21 has no schema-aware deserializer",
        },
        args,
    ));

    // apache-avro 0.22, serde without the value tree.
    let schema22 = avro022::Schema::parse_str(kind.schema_json())
        .with_context(|| format!("apache-avro 0.22 parsing the {kind:?} schema"))?;
    let writer22 = avro022::writer::datum::GenericDatumWriter::builder(&schema22)
        .build()
        .map_err(|e| anyhow!("{e}"))?;
    let reader22 = avro022::reader::datum::GenericDatumReader::builder(&schema22)
        .build()
        .map_err(|e| anyhow!("{e}"))?;
    all.push(measure(
        event,
        &ours,
        Route {
            encode: Some(Box::new(|e: &E| {
                let mut out = framed(&expected);
                writer22.write_ser(&mut out, e)?;
                Ok(out)
            })),
            decode: Some(Box::new(|b: &[u8]| {
                let mut rest = body(b, &expected)?;
                let event: E = reader22.read_deser(&mut rest)?;
                ensure!(rest.is_empty(), "{} trailing bytes", rest.len());
                Ok(event)
            })),
            missing: "",
        },
        args,
    ));

    // serde_avro_fast.
    match kind.schema_json().parse::<serde_avro_fast::Schema>() {
        Ok(fast) => {
            let config =
                std::cell::RefCell::new(serde_avro_fast::ser::SerializerConfig::new(&fast));
            all.push(measure(
                event,
                &ours,
                Route {
                    encode: Some(Box::new(|e: &E| {
                        Ok(serde_avro_fast::to_datum(
                            e,
                            framed(&expected),
                            &mut config.borrow_mut(),
                        )?)
                    })),
                    decode: Some(Box::new(|b: &[u8]| {
                        Ok(serde_avro_fast::from_datum_slice(
                            body(b, &expected)?,
                            &fast,
                        )?)
                    })),
                    missing: "",
                },
                args,
            ));
        }
        Err(e) => {
            let why = format!("serde_avro_fast cannot parse the schema: {e}");
            all.push((Err(why.clone()), Err(why)));
        }
    }
    Ok(all)
}

macro_rules! dispatch {
    ($event:expr, $args:expr, [$($ty:ident),+ $(,)?]) => {
        match $event {
            $(AnyEvent::$ty(e) => bench_type(e, $args),)+
        }
    };
}

/// Ops per second of a mix with one of each: n / sum of the per-type times.
fn mix(rates: &[f64]) -> f64 {
    rates.len() as f64 / rates.iter().map(|r| 1.0 / r).sum::<f64>()
}

fn main() -> Result<()> {
    callstream_bench::init("codec", &[]);
    let args = Args::parse();
    let kinds: Vec<EventKind> = EventKind::ALL
        .iter()
        .copied()
        .filter(|k| args.types.is_empty() || args.types.iter().any(|t| *t == format!("{k:?}")))
        .collect();
    ensure!(!kinds.is_empty(), "no event type matches {:?}", args.types);

    // Per type: per route, (encode/s, decode/s) when measured.
    let mut table: Vec<(EventKind, Vec<Measured>)> = Vec::new();
    for kind in kinds {
        let raw = support::written_by(kind.schema(), kind.fingerprint(), support::sample(kind));
        let event = decode_any(&raw)?;
        let ty = format!("{kind:?}");
        emit(
            "encoded_bytes",
            event.encode()?.len() as f64,
            "bytes",
            &ty,
            "ours",
        )?;
        let measured = dispatch!(
            &event,
            &args,
            [
                CallEvent,
                ContactCommand,
                ScheduleRequest,
                ScheduleEvent,
                LaunchCommand,
                CallLaunch,
                CompletionMissing,
                CompletionResolved,
                CrmCommand,
                CrmResult,
                ExceptionEvent,
                ControlChange,
                Alert,
                AuditEvent,
                ContactState,
                Notification,
            ]
        )?;
        for (route, (encode, decode)) in ROUTES.iter().zip(&measured) {
            for (metric, rate) in [("encode_per_s", encode), ("decode_per_s", decode)] {
                match rate {
                    Ok(rate) => emit(metric, *rate, "ops/s", &ty, route)?,
                    Err(why) => emit_note(metric, &ty, route, why)?,
                }
            }
        }
        ratios(&ty, &measured)?;
        table.push((kind, measured));
    }

    // The mixes: one of each type, where every type was measured.
    for (name, members) in [("hot", &HOT[..]), ("all", EventKind::ALL)] {
        let rows: Vec<&Vec<Measured>> = table
            .iter()
            .filter(|(k, _)| members.contains(k))
            .map(|(_, m)| m)
            .collect();
        if rows.len() != members.len() {
            continue;
        }
        let mut mixed = Vec::with_capacity(ROUTES.len());
        for (i, route) in ROUTES.iter().enumerate() {
            let mut pair: Measured = (Err(String::new()), Err(String::new()));
            for (side, metric) in [(0, "encode_per_s"), (1, "decode_per_s")] {
                let rates: Option<Vec<f64>> = rows
                    .iter()
                    .map(|m| {
                        let r = if side == 0 { &m[i].0 } else { &m[i].1 };
                        r.as_ref().ok().copied()
                    })
                    .collect();
                if let Some(rates) = rates {
                    let rate = mix(&rates);
                    emit(metric, rate, "ops/s", name, route)?;
                    if side == 0 {
                        pair.0 = Ok(rate);
                    } else {
                        pair.1 = Ok(rate);
                    }
                }
            }
            mixed.push(pair);
        }
        ratios(name, &mixed)?;
    }
    Ok(())
}

/// `<route>_over_ours_encode` and `_decode` of each upstream route that was measured.
fn ratios(ty: &str, measured: &[Measured]) -> Result<()> {
    let (ours_encode, ours_decode) = &measured[0];
    for (route, (encode, decode)) in ROUTES.iter().zip(measured).skip(1) {
        if let (Ok(ours), Ok(theirs)) = (ours_encode, encode) {
            emit(
                &format!("{route}_over_ours_encode"),
                theirs / ours,
                "ratio",
                ty,
                route,
            )?;
        }
        if let (Ok(ours), Ok(theirs)) = (ours_decode, decode) {
            emit(
                &format!("{route}_over_ours_decode"),
                theirs / ours,
                "ratio",
                ty,
                route,
            )?;
        }
    }
    Ok(())
}
