//! libFuzzer entry point: every input goes through
//! `callstream_gateway_fuzz::launch_request`, which panics on a broken invariant.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = callstream_gateway_fuzz::launch_request(data);
});
