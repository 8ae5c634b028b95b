//! Ids go into the CRM's URL path as exactly one segment: the dispatcher's
//! client against the CRM simulator (a real HTTP server on 127.0.0.1), with
//! ids that would walk to another object if they were pasted into the path
//! as they are. No broker needed.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use callstream_crm_dispatcher::client::CrmClient;
use callstream_crm_dispatcher::wire::{CrmRequest, Outcome};
use callstream_sim_crm::objects::ObjectType;
use callstream_sim_crm::{serve_state, CrmBehaviour, CrmState, SimCrmConfig};
use chrono::Utc;
use tokio::net::TcpListener;

const TOKEN: &str = "pat-na1-test";

/// Contacts that a path walking out of its segment would reach.
const BYSTANDERS: [&str; 5] = ["456", "123", "a", "b", "search"];

async fn crm() -> (CrmState, CrmClient) {
    let config = SimCrmConfig {
        tokens: vec![TOKEN.into()],
        // Auto-create: the id the simulator decoded is the id it creates,
        // so the test sees exactly which segment arrived.
        auto_create_contacts: true,
        behaviour: CrmBehaviour {
            rate_limit_max: 0,
            ..CrmBehaviour::default()
        },
        ..SimCrmConfig::default()
    };
    let state = CrmState::new(&config).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let served = state.clone();
    tokio::spawn(async move { serve_state(served, listener, std::future::pending()).await });
    for id in BYSTANDERS {
        state
            .db()
            .update(
                ObjectType::Contacts,
                id,
                props("untouched"),
                Utc::now(),
                true,
            )
            .unwrap();
    }
    let client = CrmClient::new(&base, Duration::from_secs(10), Duration::from_secs(5), 4).unwrap();
    (state, client)
}

fn props(value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("firstname".to_owned(), value.to_owned())])
}

fn update(id: &str) -> CrmRequest {
    CrmRequest::Update {
        object_type: "contacts".into(),
        object_id: id.into(),
        properties: props("written"),
    }
}

fn assert_bystanders_untouched(state: &CrmState) {
    for id in BYSTANDERS {
        let contact = state.db().get(ObjectType::Contacts, id).unwrap();
        assert_eq!(
            contact.properties.get("firstname").map(String::as_str),
            Some("untouched"),
            "contact {id} was written"
        );
    }
}

#[tokio::test]
async fn a_hostile_contact_id_reaches_the_crm_as_one_segment_and_touches_no_other_contact() {
    let (state, client) = crm().await;
    let ids = [
        "123/../456",
        "../456",
        "123/..",
        "a?b",
        "a#b",
        "%2F",
        "%2e%2e",
        ".%2e",
        "a\\..\\456",
        "a b",
        "a/search",
        "Zoë 😀",
        "...",
    ];
    for id in ids {
        let outcome = client.send(TOKEN, &update(id)).await;
        assert_eq!(
            outcome,
            Outcome::Written {
                status: 200,
                object_id: id.to_owned()
            },
            "{id:?}"
        );
        // The simulator holds it under exactly that id, with the update.
        let written = state.db().get(ObjectType::Contacts, id).unwrap();
        assert_eq!(written.properties["firstname"], "written", "{id:?}");
    }
    assert_bystanders_untouched(&state);
    let contacts = state.db().stats().objects["contacts"];
    assert_eq!(contacts, (BYSTANDERS.len() + ids.len()) as u64);
}

#[tokio::test]
async fn an_id_no_url_can_carry_is_refused_before_anything_is_sent() {
    let (state, client) = crm().await;
    for id in ["", ".", ".."] {
        let outcome = client.send(TOKEN, &update(id)).await;
        let Outcome::Refused {
            status: 400,
            retry_after_ms: None,
            message,
        } = &outcome
        else {
            panic!("{id:?}: {outcome:?}");
        };
        assert!(message.contains("nothing was sent"), "{message}");
    }
    assert_bystanders_untouched(&state);
    let contacts = state.db().stats().objects["contacts"];
    assert_eq!(contacts, BYSTANDERS.len() as u64);
}
