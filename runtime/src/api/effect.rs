//! Effects as a processor sees them: the request it makes through the
//! context and the result handed back to `Processor::on_effect`. Running
//! them is the engine's business (`crate::effects`).

/// An effect a processor asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectRequest {
    /// The partition (task) that asked; the result returns there.
    pub partition: i32,
    /// The key the effect is about (the result is handled with its state).
    pub key: Vec<u8>,
    /// The operation id, stable across retries.
    pub id: String,
    pub payload: Vec<u8>,
}

/// What an effect returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectResult {
    pub request: EffectRequest,
    pub payload: Vec<u8>,
}
