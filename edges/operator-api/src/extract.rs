//! Request extractors whose refusals are [`ApiError`]s (axum's own answer in plain text):
//! a query or path that cannot be read is 400; a JSON body that is not JSON is 400, and
//! JSON of the wrong shape is 422. An empty body reads as the type's default, so actions
//! whose fields are all optional can be posted without one.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use utoipa::IntoParams;

use callstream_domain::input::{self, Refusal};

use crate::error::ApiError;

/// A query or path parameter that must be an id (`callstream_domain::input`): 400 naming
/// it, before Postgres or Kafka sees it.
pub fn param_id(field: &'static str, value: &str) -> Result<(), ApiError> {
    refuse(field, input::check_id(value), true)
}

/// A body field that must be an id: 422 naming it.
pub fn body_id(field: &'static str, value: &str) -> Result<(), ApiError> {
    refuse(field, input::check_id(value), false)
}

/// A body field of free text of at most `max_chars`: 422 naming it.
pub fn body_text(field: &'static str, value: &str, max_chars: usize) -> Result<(), ApiError> {
    refuse(field, input::check_text(value, max_chars), false)
}

fn refuse(
    field: &'static str,
    checked: Result<(), Refusal>,
    in_query: bool,
) -> Result<(), ApiError> {
    checked.map_err(|refusal| ApiError::Invalid {
        field,
        refusal,
        in_query,
    })
}

/// `axum::extract::Query` answering 400 with a JSON error.
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e| ApiError::BadRequest(e.body_text()))
    }
}

/// `axum::extract::Path` answering 400 with a JSON error.
pub struct Path<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Path(p.0))
            .map_err(|e| ApiError::BadRequest(e.body_text()))
    }
}

/// A JSON body; empty means `T::default()`.
pub struct Body<T>(pub T);

/// Bodies are small commands; anything larger is refused.
const MAX_BODY: usize = 16 * 1024;

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| ApiError::BadRequest(e.body_text()))?;
        if bytes.len() > MAX_BODY {
            return Err(ApiError::BadRequest(format!(
                "body larger than {MAX_BODY} bytes"
            )));
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Body(T::default()));
        }
        serde_json::from_slice(&bytes).map(Body).map_err(|e| {
            if e.is_data() {
                ApiError::Unprocessable(format!("body: {e}"))
            } else {
                ApiError::BadRequest(format!("body is not JSON: {e}"))
            }
        })
    }
}

/// `?wait=5s`: wait until the commands view shows the command applied or rejected.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitParam {
    /// How long to wait for the command's outcome, as `500ms`, `5s`, `1m` or a number of
    /// seconds; a longer wait than the server's limit (30 s by default) waits the limit.
    /// Without it the answer is immediate.
    #[param(pattern = "^[0-9]{1,9}(ms|s|m)?$")]
    pub wait: Option<String>,
}

impl WaitParam {
    /// The wait asked for, at most `max`. A client cannot know the server's limit, so a
    /// longer wait is cut to it rather than refused; the answer says `pending` if it ends
    /// before the command does, exactly as for a shorter wait.
    pub fn duration(&self, max: Duration) -> Result<Option<Duration>, ApiError> {
        let Some(text) = self.wait.as_deref() else {
            return Ok(None);
        };
        let wait = parse_wait(text).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "wait={text:?} is not a duration such as 5s or 500ms"
            ))
        })?;
        Ok(Some(wait.min(max)))
    }
}

/// `500ms`, `5s`, `1m` or a bare number of seconds.
pub fn parse_wait(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    match unit {
        "ms" => Some(Duration::from_millis(n)),
        "" | "s" => Some(Duration::from_secs(n)),
        "m" => Some(Duration::from_secs(n.checked_mul(60)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_parse() {
        let cases = [
            ("5s", Some(Duration::from_secs(5))),
            ("500ms", Some(Duration::from_millis(500))),
            ("2", Some(Duration::from_secs(2))),
            ("1m", Some(Duration::from_secs(60))),
            ("", None),
            ("5h", None),
            ("-1s", None),
            ("s", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_wait(text), expected, "{text:?}");
        }
    }

    #[test]
    fn a_wait_past_the_limit_waits_the_limit() {
        let w = WaitParam {
            wait: Some("60s".into()),
        };
        assert_eq!(
            w.duration(Duration::from_secs(30)),
            Ok(Some(Duration::from_secs(30)))
        );
        let w = WaitParam {
            wait: Some("soon".into()),
        };
        assert!(matches!(
            w.duration(Duration::from_secs(30)),
            Err(ApiError::BadRequest(_))
        ));
    }
}
