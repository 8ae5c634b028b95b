//! The operator console, served under `/console`: server-rendered HTML with htmx, every
//! asset embedded in the binary (no CDN; it works offline).
//!
//! Why this stack: the pages are views of the same rows the API reads, so rendering them
//! in Rust next to the handlers keeps one source of truth and one language, with no build
//! step, no bundle to commit and no client-side state to keep in step. htmx (one 50 KB
//! file, vendored) swaps the server's fragments in place: lists refresh themselves, an
//! action's outcome shows without a reload.
//!
//! How it is split: a page (`/console/today`, ...) is a shell with no data, so it needs no
//! token; its content comes from fragments under `/console/f/`, which htmx fetches with
//! the operator's token (kept in `sessionStorage`, for the browser session only) as a
//! bearer header. Fragments and actions take the same [`Principal`] as the API and call
//! the API's own handlers, so roles, tenant scope and input rules are the API's, and a
//! viewer is refused an action (403) whatever the page shows. No cookie is involved, so a
//! page of another site cannot make the browser act (no CSRF).

mod act;
mod chart;
mod fmt;
mod pages;

use axum::extract::FromRequestParts;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use chrono_tz::Tz;
use maud::{html, Markup, DOCTYPE};

use crate::app::AppState;
use crate::auth::Principal;
use crate::error::ApiError;

pub use fmt::Zone;

/// The console's routes, merged into the API's router.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console", get(|| async { Redirect::to("/console/today") }))
        .route(
            "/console/",
            get(|| async { Redirect::to("/console/today") }),
        )
        .route("/console/login", get(login))
        .route("/console/assets/{name}", get(asset))
        .route("/console/f/whoami", get(pages::whoami))
        .route("/console/f/today", get(pages::today))
        .route("/console/f/missing", get(pages::missing))
        .route("/console/f/exceptions", get(pages::exceptions))
        .route("/console/f/schedule", get(pages::schedule))
        .route("/console/f/contacts/{contact_id}", get(pages::contact))
        .route("/console/f/controls", get(pages::controls))
        .route("/console/f/dead-letters", get(pages::dead_letters))
        .route(
            "/console/f/act/dead-letters/{letter_id}/replay",
            post(act::replay),
        )
        .route("/console/f/commands/{command_id}", get(act::command))
        .route(
            "/console/f/act/launches/{launch_id}/{action}",
            post(act::launch),
        )
        .route(
            "/console/f/act/exceptions/{exception_id}/{action}",
            post(act::exception),
        )
        .route(
            "/console/f/act/contacts/{contact_id}/{action}",
            post(act::contact),
        )
        .route("/console/f/act/control/{setting}", post(act::control))
        .route("/console/contacts/{contact_id}", get(contact_page))
        .route("/console/{page}", get(page))
}

/// The pages in the navigation: path, title, and who sees the link.
const PAGES: [(&str, &str); 7] = [
    ("today", "Today"),
    ("missing", "Missing completions"),
    ("exceptions", "Exceptions"),
    ("schedule", "Schedule"),
    ("contacts", "Contact"),
    ("dead-letters", "Dead letters"),
    ("controls", "Controls"),
];

/// Security headers of every console answer: nothing but the console's own scripts and
/// styles run, and no other site may frame it.
fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
             frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
    );
    headers.insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · callstream" }
            link rel="stylesheet" href="/console/assets/console.css";
            script src="/console/assets/htmx.min.js" defer {}
            script src="/console/assets/console.js" defer {}
        }
    }
}

/// A page's shell: the navigation and an empty region htmx fills from `fragment` (and
/// refreshes every few seconds when `refresh`), plus the live region action outcomes go to.
fn shell(current: &str, title: &str, fragment: &str, refresh: bool) -> Response {
    let trigger = if refresh {
        "load, every 5s, refresh from:body"
    } else {
        "load, refresh from:body"
    };
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a href="#page" class="skip" { "Skip to content" }
                header {
                    nav aria-label="Console" {
                        strong { "callstream" }
                        @for (path, name) in PAGES {
                            @if path == "contacts" {
                                @if current == path { a href="#" aria-current="page" { (name) } }
                            } @else {
                                a href={ "/console/" (path) } aria-current=[(current == path).then_some("page")] { (name) }
                            }
                        }
                        span class="who" {
                            span hx-get="/console/f/whoami" hx-trigger="load" { "…" }
                            " · times in " span id="operator-zone" { "your zone" }
                        }
                        button id="logout" type="button" { "Log out" }
                    }
                }
                main {
                    h1 { (title) }
                    div id="outcome" role="status" aria-live="polite" {}
                    div id="page" data-refresh hx-get=(fragment) hx-trigger=(trigger) hx-swap="innerHTML" {
                        p class="muted" { "Loading…" }
                    }
                }
            }
        }
    };
    secured(Html(page.into_string()).into_response())
}

async fn page(
    axum::extract::Path(name): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let Some((path, title)) = PAGES.iter().find(|(p, _)| *p == name && *p != "contacts") else {
        return ConsoleError(ApiError::NotFound { what: "page" }).into_response();
    };
    // Controls change rarely: no need to poll them.
    let refresh = *path != "controls";
    shell(path, title, &format!("/console/f/{path}{query}"), refresh)
}

async fn contact_page(axum::extract::Path(contact_id): axum::extract::Path<String>) -> Response {
    if let Err(e) = crate::extract::param_id("contact_id", &contact_id) {
        return ConsoleError(e).into_response();
    }
    shell(
        "contacts",
        &format!("Contact {contact_id}"),
        &format!("/console/f/contacts/{contact_id}"),
        true,
    )
}

async fn login() -> Response {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            (head("Log in"))
            body {
                main class="login" {
                    h1 { "callstream console" }
                    p { "Paste your operator token (from " code { "callstream tokens create" } "). "
                        "It is kept in this browser tab only, until you close it or log out." }
                    form id="login" {
                        label for="token" { "Token" }
                        input id="token" name="token" type="password" autocomplete="off" required
                            spellcheck="false" autofocus;
                        p { button class="primary" type="submit" { "Log in" } }
                        p id="login-status" role="status" aria-live="polite" {}
                    }
                }
            }
        }
    };
    secured(Html(page.into_string()).into_response())
}

/// The embedded assets; they change only with the binary, so a browser may keep them an
/// hour.
async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    let (body, kind): (&'static [u8], &str) = match name.as_str() {
        "htmx.min.js" => (
            include_bytes!("assets/htmx.min.js"),
            "text/javascript; charset=utf-8",
        ),
        "console.js" => (
            include_bytes!("assets/console.js"),
            "text/javascript; charset=utf-8",
        ),
        "console.css" => (
            include_bytes!("assets/console.css"),
            "text/css; charset=utf-8",
        ),
        _ => return ConsoleError(ApiError::NotFound { what: "asset" }).into_response(),
    };
    secured(
        (
            [
                (CONTENT_TYPE, HeaderValue::from_static(kind)),
                (
                    CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=3600"),
                ),
            ],
            body,
        )
            .into_response(),
    )
}

/// An API error as a fragment the console shows where the content would have gone, with
/// the API's status (htmx is told to swap error answers in; a 401 sends to the login).
pub struct ConsoleError(pub ApiError);

impl From<ApiError> for ConsoleError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl From<sqlx::Error> for ConsoleError {
    fn from(e: sqlx::Error) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        let status = self.0.status();
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(error = %self.0, "console request failed");
        }
        let body = html! {
            p class="error" role="alert" data-status=(status.as_u16()) {
                strong { (status.canonical_reason().unwrap_or("Error")) } ": " (self.0.to_string())
            }
        };
        secured((status, Html(body.into_string())).into_response())
    }
}

/// What a fragment handler answers.
pub type Fragment = Result<Html<String>, ConsoleError>;

fn fragment(markup: Markup) -> Fragment {
    Ok(Html(markup.into_string()))
}

impl FromRequestParts<AppState> for Zone {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        let zone = parts
            .headers
            .get("x-console-zone")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<Tz>().ok())
            .unwrap_or(Tz::UTC);
        Ok(Zone(zone))
    }
}

/// The principal of a fragment request, its refusal as a console fragment.
pub struct Operator(pub Principal);

impl FromRequestParts<AppState> for Operator {
    type Rejection = ConsoleError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Principal::from_request_parts(parts, state)
            .await
            .map(Operator)
            .map_err(ConsoleError)
    }
}
