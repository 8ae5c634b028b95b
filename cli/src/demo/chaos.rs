//! Faults the run injects into callstream itself: every role SIGKILLed at random times and
//! started again at once (a crash and a supervisor's restart), and a second member of one
//! processor kind running for part of the run (a member added, then removed).
//!
//! The schedule is drawn up front from the run's seed: `rounds` kills of every role, in
//! shuffled order, one in each `every`-long interval at a random moment in it. Each fault
//! is printed with its real and business time, and the time each role took to answer its
//! readiness probe again (polled every 20 ms from the kill) is kept for the summary.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

use super::children::{Children, Ready, Role};

/// What the chaos did, for the summary.
#[derive(Debug, Default, Clone)]
pub struct ChaosReport {
    /// Kills per role.
    pub kills: BTreeMap<String, u32>,
    /// Per role, how long each restart took to answer readiness again (ms).
    pub ready_again_ms: BTreeMap<String, Vec<u64>>,
    /// Roles still not ready when the run ended.
    pub never_ready: Vec<String>,
    /// Whether a second member of a kind ran (and which).
    pub extra_member: Option<String>,
    /// Roles that stopped on their own and were started again, how often.
    pub restarted_after_exit: BTreeMap<String, u32>,
}

/// The fault schedule and its progress.
pub struct Chaos {
    /// (due, role) in due order; popped as they fire.
    kills: Vec<(Instant, String)>,
    /// The extra member: (kind, start, stop).
    extra: Option<(String, Instant, Instant)>,
    extra_running: bool,
    /// Killed roles not yet ready again: (role, a task polling its readiness every 20 ms
    /// that answers how long it took, or `None` if it never answered).
    waiting: Vec<(String, tokio::task::JoinHandle<Option<u64>>)>,
    pub report: ChaosReport,
}

impl Chaos {
    /// `rounds` kills of each of `roles`, spread over intervals of `every` from `start`;
    /// a second member of `extra_kind` (if any) runs from about a third to two thirds of
    /// the schedule.
    pub fn plan(
        seed: u64,
        roles: &[String],
        rounds: u32,
        every: Duration,
        start: Instant,
        extra_kind: Option<&str>,
    ) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x0c4a_05c4_a05c);
        let mut order = Vec::new();
        for _ in 0..rounds {
            let mut round = roles.to_vec();
            round.shuffle(&mut rng);
            order.extend(round);
        }
        let kills: Vec<(Instant, String)> = order
            .into_iter()
            .enumerate()
            .map(|(i, role)| {
                let slot = every * u32::try_from(i).unwrap_or(u32::MAX);
                let jitter = every.mul_f64(rng.random_range(0.1..0.9));
                (start + slot + jitter, role)
            })
            .collect();
        let span = every * u32::try_from(kills.len()).unwrap_or(u32::MAX);
        let extra =
            extra_kind.map(|kind| (kind.to_owned(), start + span / 3, start + span * 2 / 3));
        Self {
            kills,
            extra,
            extra_running: false,
            waiting: Vec::new(),
            report: ChaosReport::default(),
        }
    }

    /// When the last fault is due (the run keeps its faults window open until then).
    pub fn ends(&self) -> Option<Instant> {
        let last_kill = self.kills.last().map(|(at, _)| *at);
        let extra_end = self.extra.as_ref().map(|(_, _, end)| *end);
        last_kill.into_iter().chain(extra_end).max()
    }

    /// Whether faults are still due or roles are still coming back.
    pub fn active(&self) -> bool {
        !self.kills.is_empty() || !self.waiting.is_empty() || self.extra_running
    }

    /// Fires what is due, and notes roles that are ready again. `label` says when (real
    /// seconds and business time) for the log lines.
    pub async fn tick(&mut self, children: &mut Children, label: &str) -> Result<()> {
        let now = Instant::now();
        while self.kills.first().is_some_and(|(at, _)| *at <= now) {
            let (_, role) = self.kills.remove(0);
            let killed_at = Instant::now();
            if children.kill_and_restart(&role).await? {
                println!("chaos: {label}: SIGKILL {role}, started again");
                *self.report.kills.entry(role.clone()).or_default() += 1;
                // Roles without an HTTP probe (the projections) are not timed.
                if let Some(url) = children.ready_url(&role) {
                    self.waiting.retain(|(r, _)| *r != role);
                    self.waiting
                        .push((role, tokio::spawn(time_until_ready(url, killed_at))));
                }
            }
        }
        if let Some((kind, from, until)) = self.extra.clone() {
            let name = extra_name(&kind);
            if !self.extra_running && now >= from && now < until {
                if let Some(role) = children.role(&kind).map(|r| second_member(r, &name)) {
                    children.spawn(role?)?;
                    self.extra_running = true;
                    self.report.extra_member = Some(name.clone());
                    println!("chaos: {label}: a second {kind} member ({name}) joins the group");
                }
            } else if self.extra_running && now >= until {
                children.stop(Duration::from_secs(15), |n| n == name).await;
                self.extra_running = false;
                self.extra = None;
                println!("chaos: {label}: {name} leaves the group");
            }
        }
        let mut still = Vec::new();
        for (role, poll) in std::mem::take(&mut self.waiting) {
            if poll.is_finished() {
                match poll.await.ok().flatten() {
                    Some(ms) => self.report.ready_again_ms.entry(role).or_default().push(ms),
                    None => self.report.never_ready.push(role),
                }
            } else {
                still.push((role, poll));
            }
        }
        self.waiting = still;
        Ok(())
    }

    /// Ends the chaos: the roles still not ready are reported.
    pub fn finish(mut self) -> ChaosReport {
        for (role, poll) in self.waiting {
            poll.abort();
            self.report.never_ready.push(role);
        }
        self.report
    }
}

/// How long after `killed_at` `url` first answers 200, polled every 20 ms for at most
/// five minutes.
async fn time_until_ready(url: String, killed_at: Instant) -> Option<u64> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .ok()?;
    while killed_at.elapsed() < Duration::from_secs(300) {
        if client
            .get(&url)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return u64::try_from(killed_at.elapsed().as_millis()).ok();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// The name of a kind's second member.
pub fn extra_name(kind: &str) -> String {
    format!("{kind}#2")
}

/// The kind of a role name (`contact#2` is a `contact`).
pub fn kind_of(name: &str) -> &str {
    name.split('#').next().unwrap_or(name)
}

/// `role` as a second member: its own instance id and metrics port.
fn second_member(mut role: Role, name: &str) -> Result<Role> {
    let port = super::setup::free_port()?;
    role.name = name.to_owned();
    for (key, value) in &mut role.env {
        match key.as_str() {
            "CALLSTREAM_METRICS_ADDR" => *value = format!("127.0.0.1:{port}"),
            "CALLSTREAM_INSTANCE_ID" => *value = "1".into(),
            _ => {}
        }
    }
    role.ready = Ready::Http(format!("http://127.0.0.1:{port}/readyz"));
    Ok(role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_is_killed_in_every_round_once_in_order_of_due_time() {
        let roles: Vec<String> = ["gateway", "contact", "scheduler"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let start = Instant::now();
        let chaos = Chaos::plan(
            7,
            &roles,
            3,
            Duration::from_secs(10),
            start,
            Some("contact"),
        );
        assert_eq!(chaos.kills.len(), 9);
        for round in chaos.kills.chunks(3) {
            let mut names: Vec<_> = round.iter().map(|(_, r)| r.as_str()).collect();
            names.sort_unstable();
            assert_eq!(names, ["contact", "gateway", "scheduler"]);
        }
        assert!(chaos.kills.windows(2).all(|w| w[0].0 < w[1].0));
        let (kind, from, until) = chaos.extra.clone().unwrap();
        assert_eq!(kind, "contact");
        assert!(from > start && until > from);
        assert!(chaos.ends().unwrap() <= start + Duration::from_secs(90));
        assert_eq!(kind_of("contact#2"), "contact");
    }
}
