//! Table-driven tests: every Twilio status × AnsweredBy pair, the JSON
//! vocabulary with its aliases, and the typed errors.

use super::*;
use Outcome::*;

/// The AnsweredBy values in the order of the table's columns (None first).
const ANSWERED_BY: [Option<&str>; 8] = [
    None,
    Some("human"),
    Some("machine_start"),
    Some("machine_end_beep"),
    Some("machine_end_silence"),
    Some("machine_end_other"),
    Some("fax"),
    Some("unknown"),
];

/// Expected outcome for each CallStatus row and AnsweredBy column.
const TWILIO_TABLE: [(&str, [Outcome; 8]); 9] = [
    ("queued", [Queued; 8]),
    ("initiated", [Queued; 8]),
    ("ringing", [Ringing; 8]),
    ("in-progress", [InProgress; 8]),
    (
        "completed",
        [
            Answered, Answered, Voicemail, Voicemail, Voicemail, Voicemail, NoAnswer, Answered,
        ],
    ),
    ("busy", [Busy; 8]),
    ("failed", [Failed; 8]),
    ("no-answer", [NoAnswer; 8]),
    ("canceled", [Canceled; 8]),
];

#[test]
fn every_twilio_status_and_answered_by_pair_maps_as_tabled() {
    let mut checked = 0;
    for (status, row) in TWILIO_TABLE {
        for (answered_by, expected) in ANSWERED_BY.iter().zip(row) {
            let got = normalise(ProviderStatus::Twilio {
                call_status: status,
                answered_by: *answered_by,
            });
            assert_eq!(got, Ok(expected), "{status} + {answered_by:?}");
            checked += 1;
        }
    }
    // The table covers the whole vocabulary, both axes.
    assert_eq!(TWILIO_TABLE.len(), TwilioCallStatus::ALL.len());
    assert_eq!(ANSWERED_BY.len(), AnsweredBy::ALL.len() + 1);
    assert_eq!(checked, 72);
}

#[test]
fn twilio_values_match_case_insensitively_and_blank_answered_by_is_absent() {
    let cases = [
        ("COMPLETED", Some("Machine_End_Beep"), Voicemail),
        ("In-Progress", None, InProgress),
        (" no-answer ", Some(""), NoAnswer),
        ("completed", Some("  "), Answered),
        ("cancelled", None, Canceled),
        ("in_progress", Some("HUMAN"), InProgress),
    ];
    for (status, by, expected) in cases {
        let got = normalise(ProviderStatus::Twilio {
            call_status: status,
            answered_by: by,
        });
        assert_eq!(got, Ok(expected), "{status:?} + {by:?}");
    }
}

#[test]
fn unknown_twilio_values_are_typed_errors() {
    let cases = [
        (
            "answered",
            None,
            NormaliseError::UnknownTwilioStatus("answered".into()),
        ),
        ("", None, NormaliseError::UnknownTwilioStatus(String::new())),
        (
            "completed",
            Some("robot"),
            NormaliseError::UnknownAnsweredBy("robot".into()),
        ),
        // An unknown AnsweredBy is reported even where it would not matter.
        (
            "ringing",
            Some("machine"),
            NormaliseError::UnknownAnsweredBy("machine".into()),
        ),
    ];
    for (status, by, expected) in cases {
        let got = normalise(ProviderStatus::Twilio {
            call_status: status,
            answered_by: by,
        });
        assert_eq!(got, Err(expected), "{status:?} + {by:?}");
    }
}

#[test]
fn json_canonical_names_round_trip_for_every_outcome() {
    for outcome in Outcome::ALL {
        assert_eq!(json_outcome(outcome.as_str()), Ok(outcome));
        // The serde name is the canonical name too.
        let json = serde_json::to_string(&outcome).unwrap();
        assert_eq!(json, format!("\"{}\"", outcome.as_str()));
    }
}

#[test]
fn json_aliases_map_case_insensitively() {
    let cases = [
        ("Answered", Answered),
        ("HUMAN", Answered),
        ("voice-mail", Voicemail),
        ("Answering Machine", Voicemail),
        ("machine", Voicemail),
        ("no-answer", NoAnswer),
        ("NoAnswer", NoAnswer),
        ("unanswered", NoAnswer),
        ("line-busy", Busy),
        ("error", Failed),
        ("Cancelled", Canceled),
        ("in-progress", InProgress),
        ("connected", InProgress),
        ("initiated", Queued),
        ("dialing", Queued),
        (" ringing ", Ringing),
    ];
    for (raw, expected) in cases {
        let got = normalise(ProviderStatus::Json { outcome: raw });
        assert_eq!(got, Ok(expected), "{raw:?}");
    }
}

#[test]
fn unknown_json_outcomes_are_typed_errors_with_clipped_values() {
    // "completed" is ambiguous (answered or voicemail?) so it is not an alias.
    for raw in ["completed", "", "maybe", "answered!"] {
        assert_eq!(
            json_outcome(raw),
            Err(NormaliseError::UnknownOutcome(raw.into())),
            "{raw:?}"
        );
    }
    let long = "x".repeat(10_000);
    match json_outcome(&long) {
        Err(NormaliseError::UnknownOutcome(v)) => assert_eq!(v.len(), 64),
        other => panic!("expected a clipped error, got {other:?}"),
    }
}

#[test]
fn only_in_flight_outcomes_are_not_final() {
    let expected = [
        (Queued, false),
        (Ringing, false),
        (InProgress, false),
        (Answered, true),
        (Voicemail, true),
        (NoAnswer, true),
        (Busy, true),
        (Failed, true),
        (Canceled, true),
    ];
    assert_eq!(expected.len(), Outcome::ALL.len());
    for (outcome, is_final) in expected {
        assert_eq!(outcome.is_final(), is_final, "{outcome}");
    }
}
