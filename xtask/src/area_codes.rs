//! `cargo xtask area-codes`: the NANP area-code table (`domain/data/nanp_area_codes.txt`)
//! compared with libphonenumber's data.
//!
//! Installs Google's libphonenumber data as the Python package `phonenumbers` (PyPI, pinned,
//! into `.stack/area-codes/venv`, see `venv`) and runs `domain/data/refresh_area_codes.py`
//! with it: one JSON line per difference on stdout, then a summary line; progress on stderr.
//! `--check` fails on a code the table lacks or a region that differs; `--write` appends the
//! missing codes to the table and never rewrites a row.

use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::layout::Layout;
use crate::venv::Tool;

/// libphonenumber's metadata, released as a Python package; a bump may bring new codes
/// (run the command after bumping and commit what it finds).
pub const PHONENUMBERS: Tool = Tool {
    name: "area-codes",
    package: "phonenumbers",
    version: "9.0.43",
    extras: "",
    also: &[],
};

/// The script, relative to the repository.
const SCRIPT: &str = "domain/data/refresh_area_codes.py";

/// What the script exits with when `--check` finds a difference that fails it.
const CHECK_FAILED: i32 = 3;

/// What to do with the differences besides printing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Report,
    Check,
    Write,
}

pub fn run(layout: &Layout, mode: Mode) -> Result<()> {
    eprintln!(
        "area-codes: making sure {}=={} (libphonenumber's data) is installed in {}",
        PHONENUMBERS.package,
        PHONENUMBERS.version,
        layout.show(&layout.stack.join(PHONENUMBERS.name).join("venv"))
    );
    PHONENUMBERS
        .ensure_quiet_stdout(layout)
        .with_context(|| format!("installing {} from PyPI", PHONENUMBERS.package))?;
    let script = layout.repo.join(SCRIPT);
    let python = PHONENUMBERS.python(layout);
    eprintln!("area-codes: running {SCRIPT}");
    let mut command = Command::new(&python);
    command.arg(&script).current_dir(&layout.repo);
    match mode {
        Mode::Report => {}
        Mode::Check => {
            command.arg("--check");
        }
        Mode::Write => {
            command.arg("--write");
        }
    }
    let status = command
        .status()
        .with_context(|| format!("running {} {SCRIPT}", layout.show(&python)))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(CHECK_FAILED) if mode == Mode::Check => bail!(
            "the area-code table differs from libphonenumber (the region_differs and \
             missing_from_ours lines above): fix the table (`--write` appends missing codes), \
             or list a region kept on purpose in REVIEWED in {SCRIPT}"
        ),
        _ => bail!("{SCRIPT} failed ({status})"),
    }
}
