//! The wall clock, injectable: production reads the system clock, tests move a manual one
//! by hand. It lives in `callstream_platform::clock` (the gateway reads it too); re-exported
//! here so processors keep naming `callstream_runtime::Clock`.

pub use callstream_platform::clock::{process_clock, Clock, ManualClock, ScaledClock, SystemClock};
