//! Replays the checked-in fuzz corpus (`fuzz/corpus/crm_answer/`) through
//! the very function the cargo-fuzz target calls (`fuzz/src/lib.rs`,
//! compiled here as a module), so CI exercises every seed and every crash
//! ever found on stable, without nightly or libFuzzer. A file that panics
//! is a failure named by its path. No broker needed.

#[path = "../fuzz/src/lib.rs"]
mod harness;

use callstream_e2e::fuzz_corpus;

#[test]
fn every_crm_answer_in_the_corpus_is_classified_without_a_panic() {
    // The seeds cover each status class and body shape.
    let reached = fuzz_corpus::replay(
        env!("CARGO_MANIFEST_DIR"),
        "crm_answer",
        20,
        harness::crm_answer,
    );
    // Each kind of answer is still covered, or the corpus no longer
    // exercises the classifier.
    let count = |f: fn(&harness::Reached) -> bool| reached.iter().filter(|r| f(r)).count();
    assert!(count(|r| r.refused) > 0, "no seed is a refusal");
    assert!(count(|r| r.understood) > 0, "no seed is understood");
    assert!(count(|r| r.retry_after) > 0, "no seed carries Retry-After");
    assert!(
        count(|r| !r.refused && !r.understood) > 0,
        "no seed is an unreadable 2xx"
    );
}
