//! What passes between the processor and its effect handler: the send asked for (the
//! effect's payload) and how it ended (the result's payload), as JSON.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::outbox::{Message, SendResult};

/// One send of one message on one channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendRequest {
    pub channel: String,
    pub attempt: u32,
    pub message: Message,
}

impl SendRequest {
    /// The effect's id: the message and the attempt, so a result answers one send.
    pub fn effect_id(&self) -> String {
        format!("{}/{}", self.message.message_id, self.attempt)
    }
}

/// The message and attempt an effect id names.
pub fn parse_effect_id(id: &str) -> Option<(Uuid, u32)> {
    let (message, attempt) = id.split_once('/')?;
    Some((message.parse().ok()?, attempt.parse().ok()?))
}

impl SendResult {
    pub fn encode(&self) -> Vec<u8> {
        // A tagged enum of strings always serialises.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Bytes that do not decode read as a retriable failure: the message goes again with
    /// its id, which a receiver can deduplicate, rather than being lost.
    pub fn decode(bytes: &[u8]) -> Self {
        serde_json::from_slice(bytes).unwrap_or_else(|e| SendResult::Failed {
            retriable: true,
            reason: format!("unreadable send result: {e}"),
        })
    }
}
