//! Embeds every frozen schema version in `history/` (named `<schema>.v<N>.avsc`), so the
//! registry can decode data written with any released version and the evolution tests can
//! check the current schemas against all of them. Adding a frozen file needs no code change.

use std::{env, error::Error, fmt::Write as _, fs, path::PathBuf};

fn main() -> Result<(), Box<dyn Error>> {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?).join("history");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries = Vec::new();
    for entry in fs::read_dir(&dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".avsc") else {
            continue;
        };
        let (schema, version) = stem
            .rsplit_once(".v")
            .and_then(|(s, v)| Some((s.to_owned(), v.parse::<u32>().ok()?)))
            .ok_or_else(|| format!("history/{name}: expected <schema>.v<N>.avsc"))?;
        entries.push((schema, version, path.display().to_string()));
    }
    entries.sort();
    let mut out = String::from("/// Frozen schema versions found in `history/` at build time.\n");
    out.push_str("pub(crate) const FROZEN: &[FrozenFile] = &[\n");
    for (schema, version, path) in &entries {
        writeln!(
            out,
            "    FrozenFile {{ stem: {schema:?}, version: {version}, json: include_str!({path:?}) }},"
        )?;
    }
    out.push_str("];\n");
    fs::write(PathBuf::from(env::var("OUT_DIR")?).join("frozen.rs"), out)?;
    Ok(())
}
