//! The channels file: where notifications can go, declared by whoever runs the notifier,
//! with their secrets and which tenants may use each. Tenants' routes (in `control`) name
//! these channels; a route to a channel that does not admit the tenant sends nothing there.
//!
//! ```toml
//! [smtp]                      # for email channels
//! host = "127.0.0.1"
//! port = 2525
//! tls = "none"                # none (loopback only), starttls or tls
//! from = "callstream <alerts@callstream.local>"
//! # username = "...", password_file = "/run/secrets/smtp"
//!
//! [channels.acme-ops-email]
//! kind = "email"
//! to = ["ops@acme.example"]
//! tenants = ["acme"]
//! per_minute = 30             # the channel's rate limit (default 30)
//!
//! [channels.acme-ops-chat]
//! kind = "chat"               # Slack-compatible incoming webhook
//! url_file = "/run/secrets/acme-slack-url"
//! tenants = ["acme"]
//!
//! [channels.ops-webhook]
//! kind = "webhook"            # signed with Standard Webhooks
//! url = "https://ops.example/hooks/callstream"
//! secret_file = "/run/secrets/ops-webhook"   # whsec_...
//! tenants = ["*"]             # every tenant's notifications may go here
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A channels file that cannot be used; nothing starts with it.
#[derive(Debug, thiserror::Error)]
pub enum ChannelsError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Syntax {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error("{path}: {problem}")]
    Invalid { path: String, problem: String },
}

/// How an email channel's messages leave.
#[derive(Clone, PartialEq, Eq)]
pub struct Smtp {
    pub host: String,
    pub port: u16,
    pub tls: SmtpTls,
    pub from: String,
    pub credentials: Option<(String, String)>,
}

impl std::fmt::Debug for Smtp {
    // The password is a secret: never in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smtp")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("from", &self.from)
            .field("user", &self.credentials.as_ref().map(|(user, _)| user))
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    /// Plain SMTP: for a relay on loopback only.
    None,
    Starttls,
    Tls,
}

/// What a channel is.
#[derive(Clone, PartialEq, Eq)]
pub enum ChannelKind {
    /// A Slack-compatible incoming webhook (`{"text": ...}`).
    Chat {
        url: String,
    },
    /// A JSON webhook signed with Standard Webhooks.
    Webhook {
        url: String,
        key: Vec<u8>,
    },
    Email {
        to: Vec<String>,
    },
}

impl std::fmt::Debug for ChannelKind {
    // URLs of chat webhooks and signing keys are secrets: never in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Chat { .. } => f.write_str("Chat"),
            Self::Webhook { .. } => f.write_str("Webhook"),
            Self::Email { to } => write!(f, "Email({} recipients)", to.len()),
        }
    }
}

impl ChannelKind {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Chat { .. } => "chat",
            Self::Webhook { .. } => "webhook",
            Self::Email { .. } => "email",
        }
    }
}

/// One channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    pub kind: ChannelKind,
    /// Tenants whose notifications may go here; `*` admits every tenant.
    pub tenants: Vec<String>,
    /// Messages a minute at most (the channel's rate limit).
    pub per_minute: u32,
}

impl Channel {
    /// Whether `tenant`'s notifications may go to this channel.
    pub fn admits(&self, tenant: &str) -> bool {
        self.tenants.iter().any(|t| t == "*" || t == tenant)
    }

    /// The least time between two messages.
    pub fn interval_ms(&self) -> i64 {
        60_000 / i64::from(self.per_minute.max(1))
    }
}

/// Every channel, by name, and the SMTP relay of the email ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Channels {
    pub channels: BTreeMap<String, Channel>,
    pub smtp: Option<Smtp>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    smtp: Option<RawSmtp>,
    #[serde(default)]
    channels: BTreeMap<String, RawChannel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSmtp {
    host: String,
    port: Option<u16>,
    tls: SmtpTls,
    from: String,
    username: Option<String>,
    password: Option<String>,
    password_file: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "lowercase")]
enum RawKind {
    Chat {
        url: Option<String>,
        url_file: Option<PathBuf>,
    },
    Webhook {
        url: String,
        secret: Option<String>,
        secret_file: Option<PathBuf>,
    },
    Email {
        to: Vec<String>,
    },
}

#[derive(Deserialize)]
struct RawChannel {
    #[serde(flatten)]
    kind: RawKind,
    tenants: Vec<String>,
    per_minute: Option<u32>,
}

/// Default rate limit of a channel.
pub const DEFAULT_PER_MINUTE: u32 = 30;

impl Channels {
    /// Reads and checks a channels file; secrets named by `*_file` are read relative to
    /// the file's folder.
    pub fn load(path: &Path) -> Result<Self, ChannelsError> {
        let text = std::fs::read_to_string(path).map_err(|source| ChannelsError::Read {
            path: path.to_owned(),
            source,
        })?;
        let raw: RawFile = toml::from_str(&text).map_err(|source| ChannelsError::Syntax {
            path: path.to_owned(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        from_raw(raw, base)
    }

    /// Parses a channels file's text (secrets from files relative to `base`).
    pub fn parse(text: &str, base: &Path) -> Result<Self, ChannelsError> {
        let raw: RawFile = toml::from_str(text).map_err(|source| ChannelsError::Syntax {
            path: PathBuf::from("(channels)"),
            source,
        })?;
        from_raw(raw, base)
    }

    pub fn get(&self, name: &str) -> Option<&Channel> {
        self.channels.get(name)
    }
}

fn invalid(path: impl Into<String>, problem: impl Into<String>) -> ChannelsError {
    ChannelsError::Invalid {
        path: path.into(),
        problem: problem.into(),
    }
}

/// One of an inline value and a file holding it.
fn secret(
    path: &str,
    inline: Option<String>,
    file: Option<PathBuf>,
    base: &Path,
) -> Result<String, ChannelsError> {
    match (inline, file) {
        (Some(value), None) => Ok(value),
        (None, Some(file)) => {
            let file = base.join(file);
            std::fs::read_to_string(&file)
                .map(|s| s.trim().to_owned())
                .map_err(|e| invalid(path, format!("reading {}: {e}", file.display())))
        }
        (Some(_), Some(_)) => Err(invalid(path, "give the value or its file, not both")),
        (None, None) => Err(invalid(path, "missing (give it, or `<name>_file`)")),
    }
}

fn http_url(path: &str, url: String) -> Result<String, ChannelsError> {
    if url.starts_with("https://") || url.starts_with("http://") {
        Ok(url)
    } else {
        Err(invalid(path, "must be an http:// or https:// URL"))
    }
}

fn from_raw(raw: RawFile, base: &Path) -> Result<Channels, ChannelsError> {
    let smtp = raw
        .smtp
        .map(|s| -> Result<Smtp, ChannelsError> {
            let credentials = match (s.username, s.password, s.password_file) {
                (None, None, None) => None,
                (Some(user), password, file) => {
                    Some((user, secret("smtp.password", password, file, base)?))
                }
                (None, _, _) => {
                    return Err(invalid("smtp.username", "a password needs a username"))
                }
            };
            if s.from.trim().is_empty() {
                return Err(invalid("smtp.from", "must not be empty"));
            }
            let port = s.port.unwrap_or(match s.tls {
                SmtpTls::None => 25,
                SmtpTls::Starttls => 587,
                SmtpTls::Tls => 465,
            });
            Ok(Smtp {
                host: s.host,
                port,
                tls: s.tls,
                from: s.from,
                credentials,
            })
        })
        .transpose()?;
    let mut channels = BTreeMap::new();
    for (name, c) in raw.channels {
        let path = format!("channels.{name}");
        if name.is_empty() || name.contains('/') || name.chars().any(char::is_whitespace) {
            return Err(invalid(&path, "a channel name has no `/` or spaces"));
        }
        if c.tenants.is_empty() {
            return Err(invalid(
                format!("{path}.tenants"),
                "name the tenants that may use it, or [\"*\"]",
            ));
        }
        let kind = match c.kind {
            RawKind::Chat { url, url_file } => ChannelKind::Chat {
                url: http_url(
                    &format!("{path}.url"),
                    secret(&format!("{path}.url"), url, url_file, base)?,
                )?,
            },
            RawKind::Webhook {
                url,
                secret: inline,
                secret_file,
            } => {
                let text = secret(&format!("{path}.secret"), inline, secret_file, base)?;
                let key = callstream_platform::standard_webhooks::decode_secret(&text)
                    .map_err(|e| invalid(format!("{path}.secret"), e.to_string()))?;
                ChannelKind::Webhook {
                    url: http_url(&format!("{path}.url"), url)?,
                    key,
                }
            }
            RawKind::Email { to } => {
                if to.is_empty() || to.iter().any(|a| !a.contains('@')) {
                    return Err(invalid(format!("{path}.to"), "one or more email addresses"));
                }
                if smtp.is_none() {
                    return Err(invalid(&path, "an email channel needs the [smtp] table"));
                }
                ChannelKind::Email { to }
            }
        };
        let per_minute = c.per_minute.unwrap_or(DEFAULT_PER_MINUTE);
        if per_minute == 0 {
            return Err(invalid(format!("{path}.per_minute"), "must be at least 1"));
        }
        channels.insert(
            name,
            Channel {
                kind,
                tenants: c.tenants,
                per_minute,
            },
        );
    }
    Ok(Channels { channels, smtp })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[smtp]
host = "127.0.0.1"
port = 2525
tls = "none"
from = "callstream <alerts@callstream.local>"

[channels.acme-email]
kind = "email"
to = ["ops@acme.example"]
tenants = ["acme"]

[channels.ops-hook]
kind = "webhook"
url = "http://127.0.0.1:9/hook"
secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
tenants = ["*"]
per_minute = 120
"#;

    #[test]
    fn a_channels_file_is_read_with_its_tenants_and_limits() {
        let c = Channels::parse(FILE, Path::new(".")).unwrap();
        let email = c.get("acme-email").unwrap();
        assert!(email.admits("acme") && !email.admits("globex"));
        assert_eq!(email.per_minute, DEFAULT_PER_MINUTE);
        let hook = c.get("ops-hook").unwrap();
        assert!(hook.admits("globex"));
        assert_eq!(hook.interval_ms(), 500);
        assert_eq!(c.smtp.as_ref().unwrap().port, 2525);
        assert!(
            !format!("{:?}", hook.kind).contains("whsec"),
            "no secret in Debug"
        );
    }

    /// The deployment example reads as it says, with its secrets in files beside it.
    #[test]
    fn the_example_channels_file_is_valid() {
        let example = include_str!("../../../deploy/notifier/channels.toml");
        let dir = std::env::temp_dir().join(format!("channels-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("secrets")).unwrap();
        for (file, text) in [
            ("smtp-password", "p"),
            (
                "acme-slack-webhook-url",
                "https://hooks.slack.com/services/T/B/X",
            ),
            (
                "ops-webhook-secret",
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            ),
        ] {
            std::fs::write(dir.join("secrets").join(file), text).unwrap();
        }
        let c = Channels::parse(example, &dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(c.channels.len(), 3);
        assert!(c.get("ops-webhook").unwrap().admits("anyone"));
        assert_eq!(c.smtp.unwrap().port, 587);
    }

    #[test]
    fn unusable_channels_are_refused_with_where() {
        let cases = [
            ("[channels.a]\nkind = \"chat\"\ntenants = [\"x\"]\n", "channels.a.url"),
            ("[channels.a]\nkind = \"email\"\nto = [\"x@y\"]\ntenants = [\"x\"]\n", "[smtp]"),
            ("[channels.a]\nkind = \"webhook\"\nurl = \"http://h\"\nsecret = \"nope\"\ntenants = [\"x\"]\n", "channels.a.secret"),
            ("[channels.a]\nkind = \"chat\"\nurl = \"ftp://h\"\ntenants = [\"x\"]\n", "channels.a.url"),
            ("[channels.a]\nkind = \"chat\"\nurl = \"http://h\"\ntenants = []\n", "channels.a.tenants"),
        ];
        for (text, says) in cases {
            let error = Channels::parse(text, Path::new("."))
                .unwrap_err()
                .to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
        assert!(Channels::parse(
            "[channels.a]\nkind = \"pager\"\ntenants = [\"x\"]\n",
            Path::new(".")
        )
        .is_err());
    }
}
