//! Replays the checked-in fuzz corpus (`fuzz/corpus/<target>/`) through the
//! very functions the cargo-fuzz targets call (`fuzz/src/lib.rs`, compiled
//! here as a module), so CI exercises every seed and every crash ever
//! found on stable, without nightly or libFuzzer. A file that panics is a
//! failure named by its path.

#[path = "../fuzz/src/lib.rs"]
mod harness;

use callstream_e2e::fuzz_corpus;

fn replay(target: &str, run: fn(&[u8]) -> harness::Reached, routed: bool) {
    let reached = fuzz_corpus::replay(env!("CARGO_MANIFEST_DIR"), target, 10, run);
    // Some seeds must get all the way through (signed and parsed) and some
    // must be refused at each step, or the corpus no longer covers the code.
    let count = |f: fn(&harness::Reached) -> bool| reached.iter().filter(|r| f(r)).count();
    assert!(
        count(|r| r.verified && r.parsed) > 0,
        "{target}: no seed is accepted"
    );
    assert!(
        count(|r| !r.verified) > 0,
        "{target}: no seed fails verification"
    );
    assert!(count(|r| !r.parsed) > 0, "{target}: no seed fails parsing");
    // The webhook targets also go through the router's own path.
    if routed {
        assert!(
            count(|r| r.routed) > 0,
            "{target}: no seed is accepted by the router's webhook path"
        );
    }
}

#[test]
fn twilio_webhook_corpus() {
    replay("twilio_webhook", harness::twilio_webhook, true);
}

#[test]
fn standard_webhook_corpus() {
    replay("standard_webhook", harness::standard_webhook, true);
}

#[test]
fn launch_request_corpus() {
    replay("launch_request", harness::launch_request, false);
}
