//! Reading a service's settings by name from the environment, or from any
//! lookup of the same names (tests pass a map), with one set of rules and
//! one error type for every service.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::topics::{Topics, DEFAULT_PARTITIONS};

mod secrets;

pub use secrets::{check_secret, SecretKind, WeakSecret, MIN_KEY_BYTES, PLACEHOLDER};

/// A setting that is missing or cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("{0} is required")]
    Missing(&'static str),
    #[error("{name}={value:?}: {problem}")]
    Invalid {
        name: &'static str,
        value: String,
        problem: &'static str,
    },
    /// A secret that is a placeholder or too short; shown without its value.
    #[error(transparent)]
    WeakSecret(#[from] WeakSecret),
}

/// Settings read by name through `lookup`.
///
/// A number that is set must parse, even when blank: an empty value is more
/// likely a mistake than a wish for the default.
pub struct Settings<F> {
    lookup: F,
}

/// How [`Settings::env`] looks a name up.
pub type EnvLookup = fn(&str) -> Option<String>;

impl Settings<EnvLookup> {
    /// The process environment (a value that is not unicode counts as unset).
    pub fn env() -> Self {
        Self::new(|name| std::env::var(name).ok())
    }
}

impl<F: Fn(&str) -> Option<String>> Settings<F> {
    pub fn new(lookup: F) -> Self {
        Self { lookup }
    }

    /// The value as set, blank or not.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
    }

    /// The value unless it is unset or blank.
    pub fn non_empty(&self, name: &str) -> Option<String> {
        self.get(name).filter(|value| !value.trim().is_empty())
    }

    /// The value; unset or blank is an error.
    pub fn required(&self, name: &'static str) -> Result<String, SettingError> {
        self.non_empty(name).ok_or(SettingError::Missing(name))
    }

    /// A secret that is required and passes [`check_secret`] for `kind`. Surrounding
    /// whitespace is removed (it is never part of a token and often pasted by mistake).
    pub fn secret(&self, name: &'static str, kind: SecretKind) -> Result<String, SettingError> {
        let value = self.required(name)?.trim().to_owned();
        check_secret(name, value.as_bytes(), kind)?;
        Ok(value)
    }

    /// The Postgres URL: `DATABASE_URL`, or the text of the file `DATABASE_URL_FILE` names
    /// (a Docker or Kubernetes secret, since the URL holds the password), else `default`.
    pub fn database_url(&self, default: &str) -> Result<String, SettingError> {
        if let Some(path) = self.non_empty("DATABASE_URL_FILE") {
            let text = std::fs::read_to_string(path.trim()).map_err(|_| SettingError::Invalid {
                name: "DATABASE_URL_FILE",
                value: path.clone(),
                problem: "cannot be read",
            })?;
            let url = text.trim();
            if url.is_empty() {
                return Err(SettingError::Invalid {
                    name: "DATABASE_URL_FILE",
                    value: path,
                    problem: "names an empty file",
                });
            }
            return Ok(url.to_owned());
        }
        Ok(self
            .non_empty("DATABASE_URL")
            .unwrap_or_else(|| default.to_owned()))
    }

    /// A whole number, `default` when unset.
    pub fn number(&self, name: &'static str, default: u64) -> Result<u64, SettingError> {
        match self.get(name) {
            None => Ok(default),
            Some(value) => value.trim().parse().map_err(|_| SettingError::Invalid {
                name,
                value,
                problem: "not a whole number",
            }),
        }
    }

    /// A duration in whole milliseconds, `default` when unset.
    pub fn millis(&self, name: &'static str, default: Duration) -> Result<Duration, SettingError> {
        let default = u64::try_from(default.as_millis()).unwrap_or(u64::MAX);
        self.number(name, default).map(Duration::from_millis)
    }

    /// A `key=value,key=value` list, `None` when unset. `expected` is the
    /// problem a malformed item is reported with (`"expected tenant=token"`).
    ///
    /// A malformed item is reported by its key alone: values may be secrets.
    pub fn pairs(
        &self,
        name: &'static str,
        expected: &'static str,
    ) -> Result<Option<BTreeMap<String, String>>, SettingError> {
        let Some(list) = self.get(name) else {
            return Ok(None);
        };
        let mut pairs = BTreeMap::new();
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let parsed = item
                .split_once('=')
                .map(|(key, value)| (key.trim(), value.trim()))
                .filter(|(key, value)| !key.is_empty() && !value.is_empty());
            let Some((key, value)) = parsed else {
                return Err(SettingError::Invalid {
                    name,
                    value: item.split('=').next().unwrap_or_default().to_owned(),
                    problem: expected,
                });
            };
            pairs.insert(key.to_owned(), value.to_owned());
        }
        Ok(Some(pairs))
    }

    /// The `CALLSTREAM_TOPIC_*` settings described on [`Topics`]' fields.
    pub fn topics(&self) -> Result<Topics, SettingError> {
        Ok(Topics {
            prefix: self.get("CALLSTREAM_TOPIC_PREFIX").unwrap_or_default(),
            partitions: self.positive("CALLSTREAM_TOPIC_PARTITIONS", DEFAULT_PARTITIONS)?,
            replication_factor: self.positive("CALLSTREAM_REPLICATION_FACTOR", 1)?,
            min_insync_replicas: self.positive("CALLSTREAM_MIN_INSYNC_REPLICAS", 1)?,
        })
    }

    /// A positive `i32` (what Kafka's admin API takes), `default` when unset.
    fn positive(&self, name: &'static str, default: i32) -> Result<i32, SettingError> {
        match self.get(name) {
            None => Ok(default),
            Some(value) => match value.trim().parse::<i32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(SettingError::Invalid {
                    name,
                    value,
                    problem: "not a positive whole number",
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Settings<impl Fn(&str) -> Option<String>> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::new(move |name| map.get(name).cloned())
    }

    fn invalid(name: &'static str, value: &str, problem: &'static str) -> SettingError {
        SettingError::Invalid {
            name,
            value: value.into(),
            problem,
        }
    }

    #[test]
    fn the_database_url_comes_from_its_file_before_the_variable() {
        let dir = std::env::temp_dir().join(format!("settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("url");
        std::fs::write(&file, "postgres://u:secret@db/x\n").unwrap();
        let path = file.display().to_string();
        let both = settings(&[
            ("DATABASE_URL", "postgres://plain"),
            ("DATABASE_URL_FILE", &path),
        ]);
        assert_eq!(both.database_url("d").unwrap(), "postgres://u:secret@db/x");
        assert_eq!(
            settings(&[("DATABASE_URL", "postgres://plain")])
                .database_url("d")
                .unwrap(),
            "postgres://plain"
        );
        assert_eq!(settings(&[]).database_url("d").unwrap(), "d");
        let missing = settings(&[("DATABASE_URL_FILE", "/nonexistent/url")]).database_url("d");
        assert_eq!(
            missing,
            Err(invalid(
                "DATABASE_URL_FILE",
                "/nonexistent/url",
                "cannot be read"
            ))
        );
        std::fs::write(&file, " \n").unwrap();
        let empty = settings(&[("DATABASE_URL_FILE", &path)]).database_url("d");
        assert_eq!(
            empty,
            Err(invalid("DATABASE_URL_FILE", &path, "names an empty file"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn get_returns_the_value_as_set_and_non_empty_drops_blanks() {
        let s = settings(&[("A", " x "), ("BLANK", "  ")]);
        assert_eq!(s.get("A").as_deref(), Some(" x "));
        assert_eq!(s.get("BLANK").as_deref(), Some("  "));
        assert_eq!(s.get("UNSET"), None);
        assert_eq!(s.non_empty("A").as_deref(), Some(" x "));
        assert_eq!(s.non_empty("BLANK"), None);
        assert_eq!(s.non_empty("UNSET"), None);
    }

    #[test]
    fn required_refuses_unset_and_blank_by_name() {
        let s = settings(&[("A", "x"), ("BLANK", " ")]);
        assert_eq!(s.required("A").unwrap(), "x");
        assert_eq!(s.required("BLANK"), Err(SettingError::Missing("BLANK")));
        let error = s.required("UNSET").unwrap_err();
        assert_eq!(error, SettingError::Missing("UNSET"));
        assert_eq!(error.to_string(), "UNSET is required");
    }

    #[test]
    fn secret_requires_a_value_and_refuses_a_placeholder_by_name_only() {
        let s = settings(&[
            ("TOKEN", " 0123456789abcdef \n"),
            ("SHORT", "0123456789abcde"),
            ("PLACEHOLDER", "change-me"),
        ]);
        assert_eq!(
            s.secret("TOKEN", SecretKind::Key).unwrap(),
            "0123456789abcdef"
        );
        assert_eq!(
            s.secret("UNSET", SecretKind::Credential),
            Err(SettingError::Missing("UNSET"))
        );
        for name in ["SHORT", "PLACEHOLDER"] {
            let error = s.secret(name, SecretKind::Key).unwrap_err();
            assert!(matches!(&error, SettingError::WeakSecret(w) if w.name == name));
            assert!(!error.to_string().contains("change-me"), "{error}");
            assert!(!error.to_string().contains("0123"), "{error}");
        }
    }

    #[test]
    fn number_defaults_when_unset_and_refuses_what_does_not_parse() {
        let s = settings(&[("N", " 42 "), ("BAD", "many"), ("BLANK", ""), ("NEG", "-1")]);
        assert_eq!(s.number("N", 7), Ok(42));
        assert_eq!(s.number("UNSET", 7), Ok(7));
        assert_eq!(
            s.number("BAD", 7),
            Err(invalid("BAD", "many", "not a whole number"))
        );
        assert!(s.number("BLANK", 7).is_err());
        assert!(s.number("NEG", 7).is_err());
        assert_eq!(
            s.number("BAD", 7).unwrap_err().to_string(),
            "BAD=\"many\": not a whole number"
        );
    }

    #[test]
    fn millis_reads_milliseconds_and_defaults_when_unset() {
        let s = settings(&[("T", "250"), ("BAD", "1s")]);
        let default = Duration::from_secs(3);
        assert_eq!(s.millis("T", default), Ok(Duration::from_millis(250)));
        assert_eq!(s.millis("UNSET", default), Ok(default));
        assert_eq!(
            s.millis("UNSET", Duration::MAX),
            Ok(Duration::from_millis(u64::MAX))
        );
        assert_eq!(
            s.millis("BAD", default),
            Err(invalid("BAD", "1s", "not a whole number"))
        );
    }

    #[test]
    fn pairs_reads_a_list_and_names_a_bad_item_by_its_key_only() {
        let s = settings(&[
            ("P", " t1=a, t2 = b ,,"),
            ("EMPTY", ""),
            ("BAD", "t1=secret,t2="),
            ("NO_EQUALS", "t1=secret,broken"),
        ]);
        let expected = "expected tenant=token";
        let pairs = s.pairs("P", expected).unwrap().unwrap();
        assert_eq!(
            pairs.into_iter().collect::<Vec<_>>(),
            [("t1".into(), "a".into()), ("t2".into(), "b".into())]
        );
        assert_eq!(s.pairs("UNSET", expected), Ok(None));
        assert_eq!(s.pairs("EMPTY", expected), Ok(Some(BTreeMap::new())));
        assert_eq!(
            s.pairs("BAD", expected),
            Err(invalid("BAD", "t2", expected))
        );
        let error = s.pairs("NO_EQUALS", expected).unwrap_err();
        assert_eq!(error, invalid("NO_EQUALS", "broken", expected));
        assert!(!error.to_string().contains("secret"), "{error}");
    }

    #[test]
    fn topics_default_when_unset_and_take_positive_numbers_only() {
        assert_eq!(settings(&[]).topics(), Ok(Topics::default()));
        let topics = settings(&[
            ("CALLSTREAM_TOPIC_PREFIX", "run7."),
            ("CALLSTREAM_TOPIC_PARTITIONS", "4"),
            ("CALLSTREAM_REPLICATION_FACTOR", " 3 "),
            ("CALLSTREAM_MIN_INSYNC_REPLICAS", "2"),
        ])
        .topics()
        .unwrap();
        assert_eq!(
            topics,
            Topics {
                prefix: "run7.".into(),
                partitions: 4,
                replication_factor: 3,
                min_insync_replicas: 2,
            }
        );
        for (name, value) in [
            ("CALLSTREAM_TOPIC_PARTITIONS", "0"),
            ("CALLSTREAM_REPLICATION_FACTOR", "-1"),
            ("CALLSTREAM_MIN_INSYNC_REPLICAS", "two"),
        ] {
            assert_eq!(
                settings(&[(name, value)]).topics(),
                Err(invalid(name, value, "not a positive whole number"))
            );
        }
    }
}
