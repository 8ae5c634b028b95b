//! A reader of the `control` table straight from the schema's
//! `ControlChange` values, for use until the typed `callstream-control`
//! view is available. Same keys (`tenant/setting[/campaign]`), same safe
//! choices: an unreadable pause reads as paused.

use std::sync::Arc;
use std::time::Duration;

use callstream_domain::calling_window::{CampaignWindow, Days, WindowRule};
use callstream_domain::policy::CampaignPolicy;
use callstream_domain::timezone::parse_zone;
use callstream_runtime::Context;
use callstream_schemas::{ControlChange, Event};
use chrono::{NaiveTime, Weekday};
use chrono_tz::Tz;

use crate::processor::ControlSource;
use crate::settings::{CampaignRules, ControlRead};

/// Reads `control` (physical topic name) from the runtime's global tables.
#[derive(Debug, Clone)]
pub struct GlobalControl {
    pub topic: String,
}

struct Reader<'a> {
    ctx: &'a Context<'a>,
    topic: &'a str,
}

impl ControlSource for GlobalControl {
    fn read<'a>(&'a self, ctx: &'a Context<'a>) -> Box<dyn ControlRead + 'a> {
        Box::new(Reader {
            ctx,
            topic: &self.topic,
        })
    }
}

fn builtin() -> CampaignRules {
    let t = |h| NaiveTime::from_hms_opt(h, 0, 0).unwrap_or(NaiveTime::MIN);
    let window = CampaignWindow::new(vec![WindowRule::new(Days::WEEKDAYS, t(9), t(20))]);
    CampaignRules {
        window: window.unwrap_or_else(|_| unreachable!("a rule with days is a valid window")),
        policy: CampaignPolicy::default(),
        move_buffer: Duration::from_secs(15 * 60),
    }
}

impl Reader<'_> {
    fn change(&self, key: &str) -> Option<Result<ControlChange, ()>> {
        let raw = self.ctx.global(self.topic, key.as_bytes())?;
        Some(ControlChange::decode(raw).map_err(|_| ()))
    }

    fn flag(&self, key: &str) -> bool {
        match self.change(key) {
            None => false,
            Some(Ok(change)) => change.new_value.enabled.unwrap_or(false),
            Some(Err(())) => true,
        }
    }
}

const WEEK: [Weekday; 7] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
    Weekday::Sat,
    Weekday::Sun,
];

fn rules_of(change: &ControlChange, campaign: &str) -> Option<CampaignRules> {
    let wire = change.new_value.campaign.as_ref()?;
    let minute = |m: i32| {
        let m = u32::try_from(m.rem_euclid(1440)).ok()?;
        NaiveTime::from_hms_opt(m / 60, m % 60, 0)
    };
    let mut rules = Vec::new();
    for w in &wire.windows {
        let days = w.days_of_week.iter().try_fold(Days::NONE, |acc, d| {
            let i = usize::try_from(d.checked_sub(1)?).ok()?;
            Some(acc.with(*WEEK.get(i)?))
        })?;
        rules.push(WindowRule::new(
            days,
            minute(w.start_minute)?,
            minute(w.end_minute)?,
        ));
    }
    let delays: Vec<u32> = wire
        .retry_delays_minutes
        .iter()
        .map(|d| u32::try_from(*d).unwrap_or(0))
        .collect();
    let policy = CampaignPolicy {
        voicemail_retry_minutes: delays.clone(),
        no_answer_retry_minutes: delays.clone(),
        busy_retry_minutes: delays,
        max_attempts: u32::try_from(wire.max_attempts).ok()?,
        next_campaign: wire.next_campaign_id.clone(),
        ..CampaignPolicy::default()
    };
    policy.validate(campaign).ok()?;
    Some(CampaignRules {
        window: CampaignWindow::new(rules).ok()?,
        policy,
        move_buffer: Duration::from_secs(u64::try_from(wire.move_buffer_minutes).ok()? * 60),
    })
}

impl ControlRead for Reader<'_> {
    fn pause(&self, tenant: &str, campaign: &str) -> Option<&'static str> {
        if self.flag(&format!("{tenant}/system_pause")) || self.flag("*/system_pause") {
            Some("system_paused")
        } else if self.flag(&format!("{tenant}/campaign_pause/{campaign}")) {
            Some("campaign_paused")
        } else {
            None
        }
    }

    fn campaign(&self, tenant: &str, campaign: &str) -> Arc<CampaignRules> {
        for key in [
            format!("{tenant}/campaign_settings/{campaign}"),
            format!("{tenant}/campaign_settings"),
        ] {
            if let Some(rules) = self
                .change(&key)
                .and_then(Result::ok)
                .and_then(|c| rules_of(&c, campaign))
            {
                return Arc::new(rules);
            }
        }
        Arc::new(builtin())
    }

    fn default_zone(&self, tenant: &str) -> Tz {
        self.change(&format!("{tenant}/grid_settings"))
            .and_then(Result::ok)
            .and_then(|c| c.new_value.grid)
            .and_then(|g| parse_zone(&g.default_time_zone).ok())
            .unwrap_or(chrono_tz::America::New_York)
    }
}
