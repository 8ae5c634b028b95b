//! The processor API: what domain code sees. It is the bottom floor of the
//! runtime: nothing here depends on the engine (tasks, the timer index, dead
//! letters, Kafka), and no rdkafka type appears, so processors run unchanged
//! on Kafka and on the in-memory test driver. The context reaches its task
//! through one crate-private trait (`context::TaskView`).

mod context;
mod effect;
mod processor;
mod record;
mod timer;
pub(crate) mod timer_key;

pub use context::Context;
pub(crate) use context::{Change, Effects, TaskView};
pub use effect::{EffectRequest, EffectResult};
pub use processor::{ProcessError, Processor};
pub(crate) use record::inherit_headers;
pub use record::{header, Headers, Output, Record};
pub use timer::{TimeDomain, Timer, TimerHandle};
