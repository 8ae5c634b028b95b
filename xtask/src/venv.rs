//! Python tools from PyPI, each pinned in a venv of its own under `.stack/<name>/venv`
//! (installed once; a version bump reinstalls): schemathesis for the API check, aiosmtpd
//! as the SMTP server the notifier's tests and the demo send email to, phonenumbers
//! (libphonenumber's data) for the area-code table's refresh.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::layout::Layout;

/// A pinned PyPI package in its own venv.
pub struct Tool {
    /// The folder under `.stack/`.
    pub name: &'static str,
    pub package: &'static str,
    pub version: &'static str,
    /// The package's extras, as pip writes them (`[avro,schemaregistry]`), or empty.
    pub extras: &'static str,
    /// More pinned requirements installed beside it (`fastavro==1.13.1`).
    pub also: &'static [&'static str],
}

/// aiosmtpd: a real SMTP server in Python, whose `Mailbox` handler writes each message it
/// accepts to a Maildir.
pub const AIOSMTPD: Tool = Tool {
    name: "smtp-sink",
    package: "aiosmtpd",
    version: "1.4.6",
    extras: "",
    also: &[],
};

/// confluent-kafka, the Python client of Confluent (librdkafka inside), with its Avro
/// deserializer and schema registry client: how a downstream team in Python reads callstream's
/// topics, and what the downstream-readers test reads them with.
pub const CONFLUENT_KAFKA: Tool = Tool {
    name: "confluent-kafka",
    package: "confluent-kafka",
    version: "2.16.2",
    extras: "[avro,schemaregistry]",
    also: &["fastavro==1.13.1"],
};

impl Tool {
    fn venv(&self, layout: &Layout) -> PathBuf {
        layout.stack.join(self.name).join("venv")
    }

    /// The venv's python (what runs `python -m <tool>`).
    pub fn python(&self, layout: &Layout) -> PathBuf {
        self.venv(layout).join("bin").join("python")
    }

    /// An executable of the venv.
    pub fn bin(&self, layout: &Layout, name: &str) -> PathBuf {
        self.venv(layout).join("bin").join(name)
    }

    fn installed(&self, layout: &Layout) -> bool {
        Command::new(self.bin(layout, "pip"))
            .args(["show", self.package])
            .output()
            .is_ok_and(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| l.trim() == format!("Version: {}", self.version))
            })
    }

    /// Installs the pinned version when the venv lacks it.
    pub fn ensure(&self, layout: &Layout) -> Result<()> {
        self.ensure_with(layout, false)
    }

    /// [`Tool::ensure`] for a command whose stdout is data: what it says (and what python
    /// and pip print) goes to stderr.
    pub fn ensure_quiet_stdout(&self, layout: &Layout) -> Result<()> {
        self.ensure_with(layout, true)
    }

    fn ensure_with(&self, layout: &Layout, stdout_is_data: bool) -> Result<()> {
        if self.installed(layout) {
            return Ok(());
        }
        let venv = self.venv(layout);
        let message = format!(
            "{}: installing {}=={} into {}",
            self.name,
            self.package,
            self.version,
            layout.show(&venv)
        );
        let child_stdout = || {
            if stdout_is_data {
                Stdio::from(std::io::stderr())
            } else {
                Stdio::inherit()
            }
        };
        if stdout_is_data {
            eprintln!("{message}");
        } else {
            println!("{message}");
        }
        if !self.bin(layout, "pip").exists() {
            let status = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .stdout(child_stdout())
                .status()
                .context("running python3 -m venv (is Python 3 installed?)")?;
            if !status.success() {
                bail!("python3 -m venv failed ({status})");
            }
        }
        let spec = format!("{}{}=={}", self.package, self.extras, self.version);
        let status = Command::new(self.bin(layout, "pip"))
            .args(["install", "--quiet", &spec])
            .args(self.also)
            .stdout(child_stdout())
            .status()
            .with_context(|| format!("running {}", layout.show(&self.bin(layout, "pip"))))?;
        if !status.success() {
            bail!("pip install {spec} failed ({status})");
        }
        Ok(())
    }
}
