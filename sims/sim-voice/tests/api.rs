//! Twilio's call endpoints over real HTTP: the create answer, fetch, the
//! list with Twilio's filter names and paging, the Events subresource, and
//! Twilio-shaped refusals.

mod support;

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use support::*;

#[tokio::test]
async fn a_created_call_is_a_twilio_call_resource() {
    let rx = Receiver::start().await;
    let sim = Sim::start(config(fast(), None)).await;
    let created = sim
        .place("+15551110001", &rx.callback_url("c-1", "L1"))
        .await;
    let sid = created["sid"].as_str().unwrap();
    assert!(sid.starts_with("CA") && sid.len() == 34, "{sid}");
    assert!(sid[2..].chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(created["status"], "queued");
    assert_eq!(created["account_sid"], ACCOUNT);
    assert_eq!(created["to"], "+15551110001");
    assert_eq!(created["to_formatted"], "(555) 111-0001");
    assert_eq!(created["from"], FROM);
    assert_eq!(created["direction"], "outbound-api");
    assert_eq!(created["duration"], Value::Null);
    assert!(DateTime::parse_from_rfc2822(created["date_created"].as_str().unwrap()).is_ok());
    let uri = created["uri"].as_str().unwrap();
    assert_eq!(
        uri,
        format!("/2010-04-01/Accounts/{ACCOUNT}/Calls/{sid}.json")
    );

    sim.settle().await;
    let fetched: Value = sim.get(uri).await.json().await.unwrap();
    assert_eq!(fetched["sid"], sid);
    let status = fetched["status"].as_str().unwrap();
    assert!(
        ["completed", "busy", "no-answer", "failed"].contains(&status),
        "{status}"
    );
    assert!(fetched["end_time"].is_string());
    assert!(fetched["duration"].is_string());

    // The Events subresource shows the callback URL, and so the launch id.
    let events: Value = sim
        .get(fetched["subresource_uris"]["events"].as_str().unwrap())
        .await
        .json()
        .await
        .unwrap();
    let events = events["events"].as_array().unwrap();
    assert_eq!(events.len(), rx.twilio().len());
    let first = &events[0]["request"];
    assert!(first["url"].as_str().unwrap().contains("launch_id=L1"));
    assert_eq!(first["parameters"]["CallSid"], sid);
    assert_eq!(events[0]["response"]["response_code"], 200);
}

#[tokio::test]
async fn the_list_filters_by_twilios_names_and_pages() {
    let rx = Receiver::start().await;
    let sim = Sim::start(config(fast(), None)).await;
    let before = Utc::now() - Duration::seconds(1);
    for (to, launch) in [
        ("+15552220001", "A"),
        ("+15552220002", "B"),
        ("+15552220001", "C"),
        ("+15552220003", "D"),
        ("+15552220001", "E"),
    ] {
        sim.place(to, &rx.callback_url("c", launch)).await;
    }
    sim.settle().await;
    let list = |query: String| {
        let sim = &sim;
        async move {
            let path = format!("/2010-04-01/Accounts/{ACCOUNT}/Calls.json?{query}");
            let r = sim.get(&path).await;
            assert_eq!(r.status(), 200, "{query}");
            r.json::<Value>().await.unwrap()
        }
    };
    let count = |v: &Value| v["calls"].as_array().unwrap().len();
    let today = Utc::now().format("%Y-%m-%d").to_string();
    let yesterday = (Utc::now() - Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let since = before.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let future = (Utc::now() + Duration::hours(1))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let cases = [
        ("To=%2B15552220001".to_string(), 3),
        ("To=%2B15559999999".to_string(), 0),
        (format!("StartTime={today}"), 5),
        (format!("StartTime>={today}"), 5),
        (format!("StartTime<={yesterday}"), 0),
        (format!("StartTime%3E={since}&To=%2B15552220001"), 3),
        (format!("StartTime>={future}"), 0),
        (format!("EndTime>={today}"), 5),
    ];
    for (query, want) in cases {
        assert_eq!(count(&list(query.clone()).await), want, "{query}");
    }
    // Status: the calls that ended that way, by the record.
    let all = list(String::new()).await;
    let completed = all["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "completed")
        .count();
    assert_eq!(count(&list("Status=completed".into()).await), completed);

    // Newest first, two a page, following next_page_uri to the end.
    let mut page = list("PageSize=2".into()).await;
    let mut seen = Vec::new();
    loop {
        assert!(count(&page) <= 2);
        seen.extend(
            page["calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["sid"].clone()),
        );
        match page["next_page_uri"].as_str() {
            None => break,
            Some(next) => page = sim.get(next).await.json().await.unwrap(),
        }
    }
    let newest_first: Vec<Value> = all["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["sid"].clone())
        .collect();
    assert_eq!(seen, newest_first);
    assert_eq!(seen.len(), 5);
    let created: Vec<DateTime<Utc>> = all["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            DateTime::parse_from_rfc2822(c["date_created"].as_str().unwrap())
                .unwrap()
                .into()
        })
        .collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]));
}

#[tokio::test]
async fn refusals_are_twilio_errors() {
    let sim = Sim::start(config(fast(), None)).await;
    let calls = sim.calls_url();
    let bad_auth = sim
        .http
        .post(&calls)
        .basic_auth(ACCOUNT, Some("wrong"))
        .body("To=%2B15550001111")
        .send()
        .await
        .unwrap();
    let no_auth = sim.http.get(&calls).send().await.unwrap();
    let other_account = sim
        .get("/2010-04-01/Accounts/AC99999999999999999999999999999999/Calls.json")
        .await;
    let unknown_call = sim
        .get(&format!(
            "/2010-04-01/Accounts/{ACCOUNT}/Calls/CA00000000000000000000000000000000.json"
        ))
        .await;
    let no_to = sim.create(&[]).await;
    let bad_to = sim.create(&[("To", "5550001111")]).await;
    let bad_filter = sim
        .get(&format!(
            "/2010-04-01/Accounts/{ACCOUNT}/Calls.json?Status=dialling"
        ))
        .await;
    let cases = [
        ("bad token", bad_auth, 401, 20003),
        ("no auth", no_auth, 401, 20003),
        ("other account", other_account, 404, 20404),
        ("unknown call", unknown_call, 404, 20404),
        ("no To", no_to, 400, 21201),
        ("bad To", bad_to, 400, 21211),
        ("bad filter", bad_filter, 400, 20001),
    ];
    for (name, r, status, code) in cases {
        assert_eq!(r.status(), status, "{name}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["code"], code, "{name}");
        assert_eq!(body["status"], status, "{name}");
        assert!(body["message"].is_string(), "{name}");
        assert!(body["more_info"]
            .as_str()
            .unwrap()
            .ends_with(&code.to_string()));
    }
    let stats = sim.stats().await;
    assert_eq!(stats["creates_rejected"], 3);
    assert_eq!(stats["calls_created"], 0);
}
