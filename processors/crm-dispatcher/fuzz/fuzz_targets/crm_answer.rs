//! libFuzzer entry point: every input goes through
//! `callstream_crm_dispatcher_fuzz::crm_answer`, which panics on a broken invariant.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = callstream_crm_dispatcher_fuzz::crm_answer(data);
});
