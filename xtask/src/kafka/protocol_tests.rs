//! Tests of the readiness protocol: exact request bytes, decoding of answers shaped like a real
//! broker's, and no panic on any input.

use super::*;
use proptest::prelude::*;

fn be16(v: i16) -> [u8; 2] {
    v.to_be_bytes()
}

fn be32(v: i32) -> [u8; 4] {
    v.to_be_bytes()
}

fn kstring(s: &str) -> Vec<u8> {
    let mut v = be16(s.len() as i16).to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

fn api_versions_body(error: i16, ranges: &[(i16, i16, i16)]) -> Vec<u8> {
    let mut v = be16(error).to_vec();
    v.extend_from_slice(&be32(ranges.len() as i32));
    for &(k, lo, hi) in ranges {
        v.extend_from_slice(&be16(k));
        v.extend_from_slice(&be16(lo));
        v.extend_from_slice(&be16(hi));
    }
    v
}

fn metadata_body(brokers: &[(i32, &str, i32)], cluster: Option<&str>, controller: i32) -> Vec<u8> {
    let mut v = be32(0).to_vec(); // throttle
    v.extend_from_slice(&be32(brokers.len() as i32));
    for &(id, host, port) in brokers {
        v.extend_from_slice(&be32(id));
        v.extend(kstring(host));
        v.extend_from_slice(&be32(port));
        v.extend_from_slice(&be16(-1)); // rack: null
    }
    match cluster {
        Some(c) => v.extend(kstring(c)),
        None => v.extend_from_slice(&be16(-1)),
    }
    v.extend_from_slice(&be32(controller));
    v.extend_from_slice(&be32(0)); // topics: none
    v
}

#[test]
fn api_versions_request_is_the_documented_v0_frame() {
    let mut expected = Vec::new();
    let header_len = 2 + 2 + 4 + 2 + CLIENT_ID.len();
    expected.extend_from_slice(&be32(header_len as i32));
    expected.extend_from_slice(&be16(18));
    expected.extend_from_slice(&be16(0));
    expected.extend_from_slice(&be32(7));
    expected.extend(kstring(CLIENT_ID));
    assert_eq!(encode_api_versions_request(7), expected);
}

#[test]
fn metadata_request_body_grows_at_v8() {
    let header_len = 2 + 2 + 4 + 2 + CLIENT_ID.len();
    // topics (4) + allow_auto_topic_creation (1), plus two authorised-operations flags at v8.
    for (version, body_len) in [(4, 5), (7, 5), (8, 7)] {
        let req = encode_metadata_request(version, 1);
        assert_eq!(req.len(), 4 + header_len + body_len, "v{version}");
        assert_eq!(&req[4..6], &be16(3), "api key");
        assert_eq!(&req[6..8], &be16(version), "api version");
    }
}

#[test]
fn decodes_api_versions_including_unsupported_version_answers() {
    let ranges = [(0, 3, 13), (3, 0, 13), (18, 0, 4)];
    for error in [0, 35] {
        let got = decode_api_versions_response(&api_versions_body(error, &ranges)).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[1],
            ApiRange {
                api_key: 3,
                min: 0,
                max: 13
            }
        );
    }
    assert!(decode_api_versions_response(&api_versions_body(58, &ranges)).is_err());
}

#[test]
fn picks_the_newest_shared_metadata_version() {
    type Ranges = &'static [(i16, i16, i16)];
    let cases: &[(Ranges, Option<i16>)] = &[
        (&[(3, 0, 13)], Some(8)),
        (&[(3, 0, 6)], Some(6)),
        (&[(3, 5, 12)], Some(8)),
        (&[(3, 9, 13)], None), // broker too new for us
        (&[(3, 0, 3)], None),  // broker too old for us
        (&[(18, 0, 4)], None), // no Metadata at all
    ];
    for (ranges, expected) in cases {
        let ranges: Vec<ApiRange> = ranges
            .iter()
            .map(|&(api_key, min, max)| ApiRange { api_key, min, max })
            .collect();
        assert_eq!(pick_metadata_version(&ranges).ok(), *expected, "{ranges:?}");
    }
}

#[test]
fn decodes_the_broker_list_of_a_metadata_answer() {
    let body = metadata_body(&[(1, "127.0.0.1", 9092)], Some("q1Sh-9_ISia_zwGINzRvyQ"), 1);
    for version in [4, 8] {
        let info = decode_metadata_response(version, &body).unwrap();
        assert_eq!(info.controller_id, 1);
        assert_eq!(info.cluster_id.as_deref(), Some("q1Sh-9_ISia_zwGINzRvyQ"));
        assert_eq!(
            info.brokers,
            vec![Broker {
                node_id: 1,
                host: "127.0.0.1".into(),
                port: 9092
            }]
        );
    }
    assert!(
        decode_metadata_response(3, &body).is_err(),
        "v3 is not ours"
    );
}

#[test]
fn every_truncation_of_a_valid_answer_is_an_error() {
    let versions = api_versions_body(0, &[(3, 0, 13), (18, 0, 4)]);
    for cut in 0..versions.len() {
        assert!(
            decode_api_versions_response(&versions[..cut]).is_err(),
            "cut {cut}"
        );
    }
    let metadata = metadata_body(&[(1, "localhost", 9092)], None, 1);
    // The trailing topic count is not read, so cuts inside it still decode.
    for cut in 0..metadata.len() - 4 {
        assert!(
            decode_metadata_response(4, &metadata[..cut]).is_err(),
            "cut {cut}"
        );
    }
}

#[test]
fn a_huge_array_length_is_rejected_before_allocating() {
    let mut body = be16(0).to_vec();
    body.extend_from_slice(&be32(i32::MAX));
    assert!(decode_api_versions_response(&body).is_err());
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_api_versions_response(&bytes);
        for version in 4..=8 {
            let _ = decode_metadata_response(version, &bytes);
        }
    }
}
