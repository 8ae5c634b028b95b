//! The join state of one contact, and its compact binary form.
//!
//! One store entry per contact holds its open launches (and launches already
//! reported missing, which wait for a late completion), completions that
//! arrived before their launch, and a short memory of closed launches so a
//! duplicate completion matches nothing twice.
//!
//! Layout (version 1): `u8 version`, the contact's tenant, then three
//! counted lists. A launch whose tenant equals the contact's stores one zero
//! byte instead of the name; providers `twilio` and `json` are one byte;
//! times are zigzag varints. A typical open launch takes about 140 bytes.

use callstream_schemas::{CallEventSource, CallOutcome, MissingTrigger};
use uuid::Uuid;

use crate::codec::{CodecError, Reader, Writer};

const VERSION: u8 = 1;

/// A launch the voice platform accepted, whose completion is awaited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub launch_id: Uuid,
    pub job_id: Uuid,
    /// The `call-launch` event (cause of the `completion-missing` event).
    pub event_id: Uuid,
    pub correlation_id: Option<Uuid>,
    pub tenant_id: String,
    pub campaign_id: String,
    pub provider: String,
    pub provider_call_id: String,
    pub accepted_at_ms: i64,
    pub window_ms: i64,
    pub grace_ms: i64,
    /// Set once `completion-missing` was emitted, with the clock that passed the deadline.
    pub missing: Option<MissingTrigger>,
}

impl Launch {
    /// When the window plus grace closes.
    pub fn deadline_ms(&self) -> i64 {
        self.accepted_at_ms
            .saturating_add(self.window_ms)
            .saturating_add(self.grace_ms)
    }
}

/// A completion as the join needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub event_id: Uuid,
    pub tenant_id: String,
    pub call_id: String,
    pub launch_id: Option<Uuid>,
    /// When the provider says the call ended.
    pub occurred_at_ms: i64,
    /// When the detector saw it (its effective clock then).
    pub arrived_at_ms: i64,
    pub source: CallEventSource,
    pub outcome: CallOutcome,
}

/// A launch whose case is closed, remembered to recognise duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub launch_id: Uuid,
    pub call_key: u64,
    pub closed_at_ms: i64,
}

/// Everything the detector keeps for one contact.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContactWindows {
    pub tenant_id: String,
    pub launches: Vec<Launch>,
    pub early: Vec<Completion>,
    pub closed: Vec<Closed>,
}

impl ContactWindows {
    pub fn is_empty(&self) -> bool {
        self.launches.is_empty() && self.early.is_empty() && self.closed.is_empty()
    }
}

/// FNV-1a, 64 bits: a stable hash of a provider call id (std's hasher may
/// change between Rust versions, and this one is stored).
pub fn call_key(call_id: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in call_id.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn source_code(source: CallEventSource) -> u8 {
    match source {
        CallEventSource::Live => 0,
        CallEventSource::Recovery => 1,
        CallEventSource::Unknown => 2,
    }
}

fn source_from(code: u8) -> Result<CallEventSource, CodecError> {
    match code {
        0 => Ok(CallEventSource::Live),
        1 => Ok(CallEventSource::Recovery),
        2 => Ok(CallEventSource::Unknown),
        tag => Err(CodecError::UnknownTag {
            what: "source",
            tag,
        }),
    }
}

fn outcome_code(outcome: CallOutcome) -> u8 {
    let index = CallOutcome::ALL.iter().position(|o| *o == outcome);
    index.and_then(|i| u8::try_from(i).ok()).unwrap_or(u8::MAX)
}

fn outcome_from(code: u8) -> Result<CallOutcome, CodecError> {
    CallOutcome::ALL
        .get(usize::from(code))
        .copied()
        .ok_or(CodecError::UnknownTag {
            what: "outcome",
            tag: code,
        })
}

fn trigger_code(trigger: Option<MissingTrigger>) -> u8 {
    match trigger {
        None => 0,
        Some(MissingTrigger::StreamTime) => 1,
        Some(MissingTrigger::WallClock) => 2,
        Some(MissingTrigger::Unknown) => 3,
    }
}

fn trigger_from(code: u8) -> Result<Option<MissingTrigger>, CodecError> {
    match code {
        0 => Ok(None),
        1 => Ok(Some(MissingTrigger::StreamTime)),
        2 => Ok(Some(MissingTrigger::WallClock)),
        3 => Ok(Some(MissingTrigger::Unknown)),
        tag => Err(CodecError::UnknownTag {
            what: "trigger",
            tag,
        }),
    }
}

fn write_provider(w: &mut Writer, provider: &str) {
    match provider {
        "twilio" => w.u8(1),
        "json" => w.u8(2),
        other => {
            w.u8(0);
            w.str(other);
        }
    }
}

fn read_provider(r: &mut Reader<'_>) -> Result<String, CodecError> {
    match r.u8()? {
        0 => r.string(),
        1 => Ok("twilio".to_string()),
        2 => Ok("json".to_string()),
        tag => Err(CodecError::UnknownTag {
            what: "provider",
            tag,
        }),
    }
}

/// A tenant that equals the contact's is stored as one zero byte.
fn write_tenant(w: &mut Writer, contact_tenant: &str, tenant: &str) {
    if tenant == contact_tenant {
        w.u8(0);
    } else {
        w.u8(1);
        w.str(tenant);
    }
}

fn read_tenant(r: &mut Reader<'_>, contact_tenant: &str) -> Result<String, CodecError> {
    match r.u8()? {
        0 => Ok(contact_tenant.to_string()),
        1 => r.string(),
        tag => Err(CodecError::UnknownTag {
            what: "tenant",
            tag,
        }),
    }
}

fn count(r: &mut Reader<'_>) -> Result<usize, CodecError> {
    let n = usize::try_from(r.varint()?).unwrap_or(usize::MAX);
    // Every entry takes at least one byte, so a count beyond that is corrupt
    // (and must not drive a huge allocation).
    if n > 1 << 20 {
        return Err(CodecError::Truncated { needed: n });
    }
    Ok(n)
}

impl ContactWindows {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(32 + 150 * self.launches.len() + 80 * self.early.len());
        w.u8(VERSION);
        w.str(&self.tenant_id);
        w.varint(self.launches.len() as u64);
        for l in &self.launches {
            w.uuid(&l.launch_id);
            w.uuid(&l.job_id);
            w.uuid(&l.event_id);
            w.opt_uuid(l.correlation_id.as_ref());
            write_tenant(&mut w, &self.tenant_id, &l.tenant_id);
            w.str(&l.campaign_id);
            write_provider(&mut w, &l.provider);
            w.str(&l.provider_call_id);
            w.signed(l.accepted_at_ms);
            w.signed(l.window_ms);
            w.signed(l.grace_ms);
            w.u8(trigger_code(l.missing));
        }
        w.varint(self.early.len() as u64);
        for c in &self.early {
            w.uuid(&c.event_id);
            write_tenant(&mut w, &self.tenant_id, &c.tenant_id);
            w.str(&c.call_id);
            w.opt_uuid(c.launch_id.as_ref());
            w.signed(c.occurred_at_ms);
            w.signed(c.arrived_at_ms);
            w.u8(source_code(c.source));
            w.u8(outcome_code(c.outcome));
        }
        w.varint(self.closed.len() as u64);
        for c in &self.closed {
            w.uuid(&c.launch_id);
            w.buf.extend_from_slice(&c.call_key.to_be_bytes());
            w.signed(c.closed_at_ms);
        }
        w.buf
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != VERSION {
            return Err(CodecError::Version(version));
        }
        let tenant_id = r.string()?;
        let n = count(&mut r)?;
        let mut launches = Vec::with_capacity(n);
        for _ in 0..n {
            launches.push(Launch {
                launch_id: r.uuid()?,
                job_id: r.uuid()?,
                event_id: r.uuid()?,
                correlation_id: r.opt_uuid()?,
                tenant_id: read_tenant(&mut r, &tenant_id)?,
                campaign_id: r.string()?,
                provider: read_provider(&mut r)?,
                provider_call_id: r.string()?,
                accepted_at_ms: r.signed()?,
                window_ms: r.signed()?,
                grace_ms: r.signed()?,
                missing: trigger_from(r.u8()?)?,
            });
        }
        let n = count(&mut r)?;
        let mut early = Vec::with_capacity(n);
        for _ in 0..n {
            early.push(Completion {
                event_id: r.uuid()?,
                tenant_id: read_tenant(&mut r, &tenant_id)?,
                call_id: r.string()?,
                launch_id: r.opt_uuid()?,
                occurred_at_ms: r.signed()?,
                arrived_at_ms: r.signed()?,
                source: source_from(r.u8()?)?,
                outcome: outcome_from(r.u8()?)?,
            });
        }
        let n = count(&mut r)?;
        let mut closed = Vec::with_capacity(n);
        for _ in 0..n {
            let launch_id = r.uuid()?;
            let mut key = [0u8; 8];
            for byte in &mut key {
                *byte = r.u8()?;
            }
            closed.push(Closed {
                launch_id,
                call_key: u64::from_be_bytes(key),
                closed_at_ms: r.signed()?,
            });
        }
        r.finish()?;
        Ok(Self {
            tenant_id,
            launches,
            early,
            closed,
        })
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
