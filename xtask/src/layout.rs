//! Where everything of the dev stack lives: one state directory, `<repo>/.stack/`.
//!
//! Nothing is written outside it (apart from Maven's own cache, ~/.m2), so `reset` can wipe the
//! stack's data by deleting directories under it, and two checkouts never share a broker's data.

use std::path::{Path, PathBuf};

/// Fixed addresses of the dev stack; docker-compose.yml publishes the same ones.
pub const KAFKA_HOST: &str = "127.0.0.1";
pub const KAFKA_PORT: u16 = 9092;
pub const KAFKA_CONTROLLER_PORT: u16 = 9093;
pub const POSTGRES_HOST: &str = "127.0.0.1";
pub const POSTGRES_PORT: u16 = 5432;
pub const POSTGRES_USER: &str = "postgres";
pub const POSTGRES_DB: &str = "callstream";

pub fn kafka_bootstrap() -> String {
    format!("{KAFKA_HOST}:{KAFKA_PORT}")
}

pub fn database_url() -> String {
    format!("postgres://{POSTGRES_USER}@{POSTGRES_HOST}:{POSTGRES_PORT}/{POSTGRES_DB}")
}

/// Every path xtask reads or writes.
#[derive(Debug, Clone)]
pub struct Layout {
    pub repo: PathBuf,
    pub stack: PathBuf,
}

impl Layout {
    /// The repository is the parent of the xtask crate, wherever the checkout is.
    pub fn discover() -> Self {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let repo = manifest.parent().unwrap_or(manifest).to_path_buf();
        Self::at(repo)
    }

    pub fn at(repo: PathBuf) -> Self {
        let stack = repo.join(".stack");
        Self { repo, stack }
    }

    /// Committed inputs: the pom and log4j2 configs of the Kafka distribution we run.
    pub fn kafka_assets(&self) -> PathBuf {
        self.repo.join("xtask").join("kafka")
    }
    pub fn kafka_pom(&self) -> PathBuf {
        self.kafka_assets().join("pom.xml")
    }
    pub fn kafka_log4j(&self) -> PathBuf {
        self.kafka_assets().join("log4j2.properties")
    }

    pub fn kafka_dir(&self) -> PathBuf {
        self.stack.join("kafka")
    }
    pub fn kafka_libs(&self) -> PathBuf {
        self.kafka_dir().join("libs")
    }
    pub fn kafka_data(&self) -> PathBuf {
        self.kafka_dir().join("data")
    }
    pub fn kafka_properties(&self) -> PathBuf {
        self.kafka_dir().join("server.properties")
    }
    pub fn kafka_log(&self) -> PathBuf {
        self.kafka_dir().join("kafka.log")
    }
    /// Topics a failed test run kept for inspection; the next run deletes them.
    pub fn test_topics_file(&self) -> PathBuf {
        self.stack.join("test-topics.txt")
    }
    pub fn kafka_pid(&self) -> PathBuf {
        self.kafka_dir().join("kafka.pid")
    }

    /// The three-broker cluster (`up --cluster`): its own data, certificates, secrets and
    /// client settings; it runs from the same jars (`kafka_libs`).
    pub fn cluster_dir(&self) -> PathBuf {
        self.stack.join("cluster")
    }
    /// One node's directory: `server.properties`, `data/`, `kafka.log`, `kafka.pid`.
    pub fn cluster_node(&self, node: u16) -> PathBuf {
        self.cluster_dir().join(format!("node-{node}"))
    }
    pub fn cluster_tls(&self) -> PathBuf {
        self.cluster_dir().join("tls")
    }
    /// `<user>.password`, mode 0600.
    pub fn cluster_secrets(&self) -> PathBuf {
        self.cluster_dir().join("secrets")
    }
    /// `<user>.properties`: Java client settings (`--command-config`), mode 0600.
    pub fn cluster_clients(&self) -> PathBuf {
        self.cluster_dir().join("clients")
    }

    pub fn postgres_dir(&self) -> PathBuf {
        self.stack.join("postgres")
    }
    pub fn postgres_data(&self) -> PathBuf {
        self.postgres_dir().join("data")
    }
    pub fn postgres_socket_dir(&self) -> PathBuf {
        self.postgres_dir().join("run")
    }
    pub fn postgres_log(&self) -> PathBuf {
        self.postgres_dir().join("postgres.log")
    }

    /// The target directory cargo builds into (honours CARGO_TARGET_DIR like cargo does).
    pub fn target_dir(&self) -> PathBuf {
        match std::env::var_os("CARGO_TARGET_DIR") {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                if dir.is_absolute() {
                    dir
                } else {
                    self.repo.join(dir)
                }
            }
            None => self.repo.join("target"),
        }
    }

    /// A path relative to the repository, for messages that stay readable.
    /// The debug `callstream` binary (the test build makes it too, through the cli's tests).
    pub fn callstream_bin(&self) -> PathBuf {
        self.target_dir().join("debug").join("callstream")
    }

    pub fn show(&self, path: &Path) -> String {
        path.strip_prefix(&self.repo)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}
