//! Carries out sends (the runtime's effects): a chat webhook post, a webhook signed with
//! Standard Webhooks, or an email over SMTP. Every message carries its id where the
//! receiver can see it (`webhook-id`, `Message-ID`, `X-Callstream-Notification-Id`), so a
//! message sent again after a crash between the send and its record can be dropped by
//! the receiver.
//!
//! A result says whether trying again can help: network errors, timeouts, `429`, `5xx`
//! and SMTP's transient replies can; other refusals cannot.

use std::sync::Arc;
use std::time::Duration;

use callstream_platform::clock::{Clock, SystemClock};
use callstream_platform::standard_webhooks;
use callstream_runtime::{EffectHandler, EffectRequest};
use futures::future::BoxFuture;
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use reqwest::StatusCode;
use serde_json::json;

use crate::channels::{Channel, ChannelKind, Channels, Smtp, SmtpTls};
use crate::outbox::{Message, SendResult};
use crate::wire::SendRequest;

/// The header carrying the message id on chat posts.
pub const ID_HEADER: &str = "x-callstream-notification-id";

/// Why the sender cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SenderError {
    #[error("building the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("smtp: {0}")]
    Smtp(String),
}

struct Mail {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

/// The effect handler of the notifier.
#[derive(Clone)]
pub struct Sender {
    channels: Arc<Channels>,
    http: reqwest::Client,
    mail: Option<Arc<Mail>>,
}

fn failed(retriable: bool, reason: impl Into<String>) -> SendResult {
    SendResult::Failed {
        retriable,
        reason: reason.into(),
    }
}

fn mail(smtp: &Smtp, timeout: Duration) -> Result<Mail, SenderError> {
    let builder = match smtp.tls {
        SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&smtp.host),
        SmtpTls::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host)
            .map_err(|e| SenderError::Smtp(e.to_string()))?,
        SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&smtp.host)
            .map_err(|e| SenderError::Smtp(e.to_string()))?,
    };
    let mut builder = builder.port(smtp.port).timeout(Some(timeout));
    if let Some((user, password)) = &smtp.credentials {
        builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
    }
    let from = smtp
        .from
        .parse::<Mailbox>()
        .map_err(|e| SenderError::Smtp(format!("from {:?}: {e}", smtp.from)))?;
    Ok(Mail {
        transport: builder.build(),
        from,
    })
}

impl Sender {
    pub fn new(channels: Channels, timeout: Duration) -> Result<Self, SenderError> {
        let mail = channels
            .smtp
            .as_ref()
            .map(|s| mail(s, timeout).map(Arc::new))
            .transpose()?;
        Ok(Self {
            http: reqwest::Client::builder()
                .timeout(timeout)
                .user_agent("callstream-notifier")
                .build()?,
            channels: Arc::new(channels),
            mail,
        })
    }

    /// Sends one message on one channel.
    pub async fn send(&self, request: &SendRequest) -> SendResult {
        let Some(channel) = self.channels.get(&request.channel) else {
            return failed(false, format!("no channel {:?}", request.channel));
        };
        if !channel.admits(&request.message.tenant) {
            // Routing checks this; a channels file changed since must not leak a message.
            return failed(false, "the channel does not admit the tenant");
        }
        match &channel.kind {
            ChannelKind::Chat { url } => self.chat(url, &request.message).await,
            ChannelKind::Webhook { url, key } => self.webhook(url, key, &request.message).await,
            ChannelKind::Email { to } => self.email(channel, to, &request.message).await,
        }
    }

    async fn post(&self, request: reqwest::RequestBuilder) -> SendResult {
        match request.send().await {
            Ok(response) if response.status().is_success() => SendResult::Sent,
            Ok(response) => {
                let status = response.status();
                let retriable = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
                failed(retriable, format!("answered {status}"))
            }
            Err(e) => failed(true, format!("request failed: {e}")),
        }
    }

    async fn chat(&self, url: &str, m: &Message) -> SendResult {
        let link = m
            .link
            .as_deref()
            .map(|l| format!("\n<{l}|Open in the console>"))
            .unwrap_or_default();
        let body = json!({ "text": format!("*{}*\n{}{link}", m.title, m.text) });
        let request = self
            .http
            .post(url)
            .header(ID_HEADER, m.message_id.to_string())
            .json(&body);
        self.post(request).await
    }

    async fn webhook(&self, url: &str, key: &[u8], m: &Message) -> SendResult {
        // Real time, not business time: the receiver checks the signed timestamp against
        // its own clock.
        let now = chrono::DateTime::from_timestamp_millis(SystemClock.now_ms()).unwrap_or_default();
        let body = json!({
            "type": "callstream.notification",
            "timestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "data": {
                "id": m.message_id,
                "tenant_id": m.tenant,
                "kind": m.kind,
                "severity": m.severity.as_str(),
                "title": m.title,
                "text": m.text,
                "link": m.link,
                "count": m.count,
                "notifications": m.notifications,
            }
        });
        let bytes = body.to_string().into_bytes();
        let id = m.message_id.to_string();
        let signature = standard_webhooks::signature_header(key, &id, now.timestamp(), &bytes);
        let request = self
            .http
            .post(url)
            .header(standard_webhooks::ID, id)
            .header(standard_webhooks::TIMESTAMP, now.timestamp().to_string())
            .header(standard_webhooks::SIGNATURE, signature)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes);
        self.post(request).await
    }

    async fn email(&self, channel: &Channel, to: &[String], m: &Message) -> SendResult {
        let Some(mail) = &self.mail else {
            return failed(false, "no [smtp] relay is configured");
        };
        let mut builder = lettre::Message::builder()
            .from(mail.from.clone())
            .subject(format!("[callstream] {}", m.title))
            .message_id(Some(format!("<{}@callstream>", m.message_id)))
            .header(ContentType::TEXT_PLAIN);
        for address in to {
            match address.parse::<Mailbox>() {
                Ok(mailbox) => builder = builder.to(mailbox),
                Err(e) => return failed(false, format!("address {address:?}: {e}")),
            }
        }
        let link = m
            .link
            .as_deref()
            .map(|l| format!("\n\nOpen in the console: {l}"))
            .unwrap_or_default();
        let body = format!(
            "{}{link}\n\n-- \ncallstream notifier, channel {} ({} notification(s), id {})\n",
            m.text,
            channel.kind.name(),
            m.count,
            m.message_id
        );
        let message = match builder.body(body) {
            Ok(message) => message,
            Err(e) => return failed(false, format!("building the email: {e}")),
        };
        match mail.transport.send(message).await {
            Ok(_) => SendResult::Sent,
            // A 5xx reply refuses this message for good; anything else (4xx, the relay
            // down, a timeout) may pass later.
            Err(e) if e.is_permanent() => failed(false, format!("smtp refused: {e}")),
            Err(e) => failed(true, format!("smtp: {e}")),
        }
    }
}

impl EffectHandler for Sender {
    fn call(&self, request: EffectRequest) -> BoxFuture<'static, Vec<u8>> {
        let this = self.clone();
        Box::pin(async move {
            let result = match serde_json::from_slice::<SendRequest>(&request.payload) {
                Ok(send) => this.send(&send).await,
                Err(e) => failed(false, format!("unreadable send request: {e}")),
            };
            result.encode()
        })
    }
}
