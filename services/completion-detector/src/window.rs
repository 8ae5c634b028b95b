//! Window W and its grace per campaign or tenant, read from the `control`
//! table (setting `completion_window`): the campaign's own value, else the
//! tenant's, else the configured default.
//!
//! Control values are Avro `ControlChange` records; decoding one per launch
//! would dominate the detector's cost, so decoded values are cached and
//! re-decoded only when the stored bytes change (a change in `control`
//! applies from the next launch, as the runtime promises for globals).

use std::collections::HashMap;

use callstream_schemas::{ControlChange, ControlSetting, Event};

/// W and grace for one launch, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub window_ms: i64,
    pub grace_ms: i64,
}

/// The `control` key of a tenant's (or campaign's) completion window.
pub fn control_key(tenant: &str, campaign: Option<&str>) -> String {
    let setting = ControlSetting::CompletionWindow.as_str();
    match campaign {
        Some(campaign) => format!("{tenant}/{setting}/{campaign}"),
        None => format!("{tenant}/{setting}"),
    }
}

/// Decoded control values, keyed by control key.
#[derive(Debug, Default)]
pub struct WindowCache {
    entries: HashMap<String, (Vec<u8>, Option<Window>)>,
}

impl WindowCache {
    /// The window a control value sets; `None` when the value is absent, does
    /// not decode or sets no (positive) window, so the next source applies.
    fn lookup(&mut self, key: String, raw: Option<&[u8]>) -> Option<Window> {
        let raw = raw?;
        if let Some((cached, window)) = self.entries.get(&key) {
            if cached.as_slice() == raw {
                return *window;
            }
        }
        let window = match ControlChange::decode(raw) {
            Ok(change) => change
                .new_value
                .completion
                .filter(|c| c.window_ms > 0 && c.grace_ms >= 0)
                .map(|c| Window {
                    window_ms: c.window_ms,
                    grace_ms: c.grace_ms,
                }),
            Err(error) => {
                tracing::warn!(key, %error, "control value for the completion window does not decode; using the next source");
                None
            }
        };
        self.entries.insert(key, (raw.to_vec(), window));
        window
    }

    /// W for a launch of `tenant` in `campaign`; `read` fetches a control key.
    pub fn window<'a>(
        &mut self,
        tenant: &str,
        campaign: &str,
        default: Window,
        read: impl Fn(&str) -> Option<&'a [u8]>,
    ) -> Window {
        let campaign_key = control_key(tenant, Some(campaign));
        let raw = read(&campaign_key);
        if let Some(window) = self.lookup(campaign_key, raw) {
            return window;
        }
        let tenant_key = control_key(tenant, None);
        let raw = read(&tenant_key);
        self.lookup(tenant_key, raw).unwrap_or(default)
    }

    /// The tenant-wide window (for bucket closing times).
    pub fn tenant_window<'a>(
        &mut self,
        tenant: &str,
        default: Window,
        read: impl Fn(&str) -> Option<&'a [u8]>,
    ) -> Window {
        let key = control_key(tenant, None);
        let raw = read(&key);
        self.lookup(key, raw).unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use callstream_schemas::{Actor, CompletionSettings, ControlValue};
    use std::collections::HashMap;
    use uuid::Uuid;

    pub(crate) fn window_change(tenant: &str, campaign: Option<&str>, w: i64, g: i64) -> Vec<u8> {
        ControlChange {
            event_id: Uuid::nil(),
            tenant_id: tenant.into(),
            occurred_at: chrono::DateTime::from_timestamp_millis(0).unwrap(),
            causation_id: None,
            correlation_id: None,
            setting: ControlSetting::CompletionWindow,
            campaign_id: campaign.map(str::to_string),
            new_value: ControlValue {
                completion: Some(CompletionSettings {
                    window_ms: w,
                    grace_ms: g,
                }),
                ..ControlValue::default()
            },
            old_value: None,
            actor: Actor::operator("ops"),
            reason: None,
        }
        .encode()
        .unwrap()
    }

    #[test]
    fn campaign_then_tenant_then_default() {
        let default = Window {
            window_ms: 1,
            grace_ms: 2,
        };
        let mut table: HashMap<String, Vec<u8>> = HashMap::new();
        let mut cache = WindowCache::default();
        let get = |t: &HashMap<String, Vec<u8>>, c: &mut WindowCache| {
            c.window("t1", "c1", default, |k| t.get(k).map(Vec::as_slice))
        };
        assert_eq!(get(&table, &mut cache), default);
        table.insert(control_key("t1", None), window_change("t1", None, 10, 3));
        assert_eq!(get(&table, &mut cache).window_ms, 10);
        table.insert(
            control_key("t1", Some("c1")),
            window_change("t1", Some("c1"), 20, 4),
        );
        assert_eq!(get(&table, &mut cache).window_ms, 20);
        // A change of the stored bytes is seen on the next lookup.
        table.insert(
            control_key("t1", Some("c1")),
            window_change("t1", Some("c1"), 30, 4),
        );
        assert_eq!(get(&table, &mut cache).window_ms, 30);
        table.insert(control_key("t1", Some("c1")), b"garbage".to_vec());
        assert_eq!(get(&table, &mut cache).window_ms, 10);
    }
}
