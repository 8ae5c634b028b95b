//! Prints one sample event of every type as `<schema stem> <hex of its single-object bytes>`,
//! for cross-checking with other Avro implementations (see `interop/JavaCheck.java`).

#[path = "../tests/support/mod.rs"]
mod support;

use callstream_schemas::{decode_any, EventKind};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for &kind in EventKind::ALL {
        let raw = support::written_by(kind.schema(), kind.fingerprint(), support::sample(kind));
        // Re-encode through the Rust type, so the bytes are what callstream itself writes.
        let bytes = decode_any(&raw)?.encode()?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{} {hex}", kind.file_stem());
    }
    Ok(())
}
