//! Java tools the tests run the way a downstream team would: Apicurio Registry's Kafka Avro
//! deserializer, and a Kafka Connect worker (Kafka's own jars) with Apicurio's converter as
//! its plugin. Each is a pom under `xtask/java/<name>/`, whose runtime jars Maven copies into
//! `.stack/java/<name>/libs` (the same all-or-nothing fetch as the broker's jars).

use std::path::PathBuf;

use anyhow::Result;

use crate::kafka::dist;
use crate::layout::Layout;

/// A committed pom and the jars fetched from it.
pub struct JarSet {
    /// The folder under `xtask/java/` and `.stack/java/`.
    pub name: &'static str,
    /// What the jars are, for progress lines.
    pub what: &'static str,
    /// The variable that hands the libs folder to tests.
    pub env: &'static str,
}

/// `io.apicurio:apicurio-registry-avro-serde-kafka`: the downstream-readers test reads every
/// event type with its `AvroKafkaDeserializer` (tests/java/ApicurioReader.java).
pub const APICURIO_SERDE: JarSet = JarSet {
    name: "apicurio-serde",
    what: "Apicurio's Kafka Avro deserializer",
    env: "CALLSTREAM_APICURIO_SERDE_LIBS",
};

/// `connect-runtime` and `connect-file`: a standalone Connect worker with the file sink.
pub const CONNECT: JarSet = JarSet {
    name: "connect",
    what: "the Kafka Connect worker",
    env: "CALLSTREAM_CONNECT_LIBS",
};

/// `io.apicurio:apicurio-registry-utils-converter`: the Connect worker's value converter,
/// loaded from the worker's `plugin.path` (the folder above these libs).
pub const APICURIO_CONVERTER: JarSet = JarSet {
    name: "apicurio-converter",
    what: "Apicurio's Kafka Connect converter",
    env: "CALLSTREAM_APICURIO_CONVERTER_LIBS",
};

pub const ALL: [&JarSet; 3] = [&APICURIO_SERDE, &CONNECT, &APICURIO_CONVERTER];

impl JarSet {
    fn pom(&self, layout: &Layout) -> PathBuf {
        layout
            .repo
            .join("xtask")
            .join("java")
            .join(self.name)
            .join("pom.xml")
    }

    pub fn libs(&self, layout: &Layout) -> PathBuf {
        layout.stack.join("java").join(self.name).join("libs")
    }

    pub fn ensure(&self, layout: &Layout) -> Result<()> {
        dist::ensure_jars(
            layout,
            self.name,
            self.what,
            &self.pom(layout),
            &self.libs(layout),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jar_set_has_its_pom() {
        let layout = Layout::at(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."));
        for set in ALL {
            assert!(set.pom(&layout).is_file(), "{} has no pom", set.name);
        }
    }
}
