//! The operator API's request metrics: counted by route template and status (the 401 of a
//! request without a token too), served as OpenMetrics on the admin routes only, never on
//! the public port. No database or broker is needed: the pool connects lazily and nothing
//! here reaches Postgres or Kafka.
// Test code: a panic is a failed test.
#![allow(clippy::unwrap_used)]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use callstream_operator_api::{admin, app, state, OperatorApiConfig};
use callstream_platform::{KafkaSettings, Topics};
use http_body_util::BodyExt;
use tower::ServiceExt;

async fn get(router: axum::Router, path: &str) -> (StatusCode, String, String) {
    let response = router
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        content_type,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

#[tokio::test]
async fn requests_are_counted_by_route_template_and_served_on_the_admin_routes_only() {
    let config = OperatorApiConfig::new(
        "postgres://nobody@127.0.0.1:1/none",
        KafkaSettings::new("127.0.0.1:1", "metrics-test"),
        Topics::default(),
    );
    let state = state(&config).unwrap();
    let public = app(state.clone());
    let (status, _, _) = get(public.clone(), "/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    for id in [
        "7d0f1e2a-0000-4000-8000-000000000001",
        "7d0f1e2a-0000-4000-8000-000000000002",
    ] {
        let (status, _, _) = get(public.clone(), &format!("/v1/jobs/{id}")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, _, _) = get(public.clone(), "/no/such/route").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, _, _) = get(public, "/metrics").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "/metrics on the public port");

    let (status, content_type, text) = get(admin(state), "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    for line in [
        r#"callstream_operator_api_requests_total{method="GET",route="/openapi.json",status="200"} 1"#,
        r#"callstream_operator_api_requests_total{method="GET",route="/v1/jobs/{job_id}",status="401"} 2"#,
        r#"callstream_operator_api_requests_total{method="GET",route="unmatched",status="404"} 2"#,
        r#"callstream_operator_api_request_duration_seconds_count{method="GET",route="/v1/jobs/{job_id}"} 2"#,
    ] {
        assert!(text.contains(line), "missing {line} in:\n{text}");
    }
    assert!(!text.contains("7d0f1e2a"), "an id became a label:\n{text}");
    assert!(text.ends_with("# EOF\n"));
}
