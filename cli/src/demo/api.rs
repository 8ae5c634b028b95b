//! The operator API at the end of a run: the console's address with an admin
//! token to log in with, a viewer token for the run's tenant, and example calls (jobs, exceptions, missing launches, a
//! contact's timeline), each tried once so the summary can say the API
//! answers, and printed as `curl` lines to paste while `--keep-running`
//! leaves it up.

use std::fmt::Write;
use std::time::Duration;

use anyhow::{Context, Result};
use callstream_operator_api::{create_token, Role};
use serde::Serialize;
use sqlx::PgPool;

/// One example call and how the API answered it.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    pub what: String,
    pub path: String,
    /// The HTTP status (0: no answer).
    pub status: u16,
    /// Items on the first page, when the answer has them.
    pub items: Option<usize>,
}

/// The API's section of the summary.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Api {
    pub url: String,
    pub tenant: String,
    /// A viewer token (the run's own database; shown once, as tokens are).
    pub token: String,
    /// An admin token to log in to the console with (it acts: pauses, recoveries).
    pub console_token: String,
    /// The console's Today page at the run's business day (the run's clock races on
    /// after it, so "today" in the console is soon another day).
    pub console_url: String,
    /// How the console's Today fragment answered (0: no answer).
    pub console_status: u16,
    pub examples: Vec<Example>,
    pub error: Option<String>,
}

impl Api {
    /// Every example answered 200, and the console answered its page.
    pub fn answered(&self) -> bool {
        self.error.is_none()
            && !self.examples.is_empty()
            && self.examples.iter().all(|e| e.status == 200)
            && self.console_status == 200
    }

    /// The example as a `curl` line.
    pub fn curl(&self, e: &Example) -> String {
        format!(
            "curl -s -H 'Authorization: Bearer {}' '{}{}'",
            self.token, self.url, e.path
        )
    }
}

/// The operator API: a viewer token and example calls.
pub fn text(api: &Api, keep_running: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "\noperator API {} (tenant {})", api.url, api.tenant);
    if let Some(e) = &api.error {
        let _ = writeln!(o, "  not available: {e}");
        return o;
    }
    let _ = writeln!(
        o,
        "  console: {} (answered {}) · log in with the admin token {}",
        api.console_url, api.console_status, api.console_token
    );
    let _ = writeln!(o, "  viewer token: {}", api.token);
    for e in &api.examples {
        let items = e.items.map_or(String::new(), |n| format!(", {n} items"));
        let _ = writeln!(o, "  # {} (answered {}{items})", e.what, e.status);
        let _ = writeln!(o, "  {}", api.curl(e));
    }
    if !keep_running {
        let _ = writeln!(
            o,
            "  (the API stops with the run; `--keep-running` leaves it up)"
        );
    }
    o
}

/// A contact worth a look: one whose completion was recovered, else any
/// with a launch, else any with a job.
async fn interesting_contact(pool: &PgPool, tenant: &str) -> Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT contact_id FROM (
             SELECT contact_id, 0 AS rank FROM launches WHERE tenant_id = $1 AND resolution = 'recovered'
             UNION ALL SELECT contact_id, 1 FROM launches WHERE tenant_id = $1
             UNION ALL SELECT contact_id, 2 FROM jobs WHERE tenant_id = $1
         ) c ORDER BY rank, contact_id LIMIT 1",
    )
    .bind(tenant)
    .fetch_optional(pool)
    .await
    .context("choosing a contact for the timeline example")
}

fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Creates the token, and tries each example against the running API.
pub async fn examples(pool: &PgPool, url: &str, tenant: &str) -> Api {
    let mut api = Api {
        url: url.to_owned(),
        tenant: tenant.to_owned(),
        ..Api::default()
    };
    if let Err(e) = fill(&mut api, pool).await {
        api.error = Some(format!("{e:#}"));
    }
    api
}

async fn fill(api: &mut Api, pool: &PgPool) -> Result<()> {
    api.token = create_token(pool, &api.tenant, Role::Viewer, "callstream-demo")
        .await
        .context("creating a viewer token")?
        .token;
    api.console_token = create_token(pool, &api.tenant, Role::Admin, "callstream-demo-console")
        .await
        .context("creating the console's admin token")?
        .token;
    let mut paths = vec![
        ("jobs", "/v1/jobs?limit=5".to_string()),
        ("open exceptions", "/v1/exceptions?limit=5".to_string()),
        (
            "missing launches",
            "/v1/launches/missing?limit=5".to_string(),
        ),
    ];
    if let Some(contact) = interesting_contact(pool, &api.tenant).await? {
        paths.push((
            "a contact's timeline",
            format!("/v1/contacts/{}/timeline?limit=20", encode(&contact)),
        ));
    }
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .context("building the HTTP client")?;
    // The console's Today at the run's day, as the browser loads it once logged in.
    let day: Option<chrono::NaiveDate> = sqlx::query_scalar(
        "SELECT (min(bucket_start) AT TIME ZONE 'UTC')::date FROM delivery_buckets WHERE tenant_id = $1",
    )
    .bind(&api.tenant)
    .fetch_one(pool)
    .await
    .context("finding the run's day")?;
    let day = day.map(|d| format!("?day={d}")).unwrap_or_default();
    api.console_url = format!("{}/console/today{day}", api.url);
    api.console_status = http
        .get(format!("{}/console/f/today{day}", api.url))
        .bearer_auth(&api.console_token)
        .send()
        .await
        .map_or(0, |r| r.status().as_u16());
    for (what, path) in paths {
        let answer = http
            .get(format!("{}{path}", api.url))
            .bearer_auth(&api.token)
            .send()
            .await;
        let (status, items) = match answer {
            Ok(r) => {
                let status = r.status().as_u16();
                let body: Option<serde_json::Value> = r.json().await.ok();
                let items = body
                    .as_ref()
                    .and_then(|b| b.get("items"))
                    .and_then(serde_json::Value::as_array)
                    .map(Vec::len);
                (status, items)
            }
            Err(_) => (0, None),
        };
        api.examples.push(Example {
            what: what.to_owned(),
            path,
            status,
            items,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contact_ids_are_escaped_in_paths() {
        assert_eq!(encode("demo-1-c-7"), "demo-1-c-7");
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
    }

    #[test]
    fn the_api_answers_only_when_every_example_did() {
        let ok = |status| Example {
            what: "x".into(),
            path: "/v1/jobs".into(),
            status,
            items: None,
        };
        let mut api = Api {
            url: "http://127.0.0.1:1".into(),
            token: "cs_t".into(),
            examples: vec![ok(200), ok(200)],
            console_status: 200,
            ..Api::default()
        };
        assert!(api.answered());
        assert_eq!(
            api.curl(&api.examples[0]),
            "curl -s -H 'Authorization: Bearer cs_t' 'http://127.0.0.1:1/v1/jobs'"
        );
        api.console_status = 0;
        assert!(!api.answered(), "the console did not answer");
        api.console_status = 200;
        api.examples.push(ok(503));
        assert!(!api.answered());
        api.examples.clear();
        assert!(!api.answered());
    }
}
