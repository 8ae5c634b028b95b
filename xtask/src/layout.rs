//! Where everything of the dev stack lives: one state directory, `<repo>/.stack/`.
//!
//! Nothing is written outside it (apart from Maven's own cache, ~/.m2), so `reset` can wipe the
//! stack's data by deleting directories under it, and two checkouts never share a broker's data.
//! One exception: run as root, the Postgres servers run as the `postgres` OS user, who must
//! enter every folder above their files. A checkout in a private folder (root's home, mode
//! 0700) keeps those files in `/var/lib/callstream-dev/<checkout>-<hash>/` instead
//! ([`Layout::server_state`]), one folder per checkout.

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
    /// Where the Postgres servers' files live: `stack`, unless the `postgres` OS user cannot
    /// reach it (see the module's doc).
    pub server_state: PathBuf,
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
        let server_state = if crate::debian::running_as_root() && !others_can_enter(&repo) {
            private_checkout_server_state(&repo)
        } else {
            stack.clone()
        };
        Self {
            repo,
            stack,
            server_state,
        }
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
        self.server_state.join("postgres")
    }
    /// The cluster's Postgres (TLS, SCRAM): `.stack/cluster/postgres` unless the checkout is
    /// private.
    pub fn cluster_postgres_dir(&self) -> PathBuf {
        self.server_state.join("cluster").join("postgres")
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

/// Whether a user other than the owner may enter `path` and every folder above it.
fn others_can_enter(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .all(|dir| std::fs::metadata(dir).map_or(true, |m| m.permissions().mode() & 0o001 != 0))
}

/// A folder of the checkout's own outside it, named by the checkout's folder and a hash of
/// its path (FNV-1a: stable across runs and Rust versions).
fn private_checkout_server_state(repo: &Path) -> PathBuf {
    let hash = repo
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    let name = repo
        .file_name()
        .map_or_else(|| "checkout".into(), |n| n.to_string_lossy());
    PathBuf::from("/var/lib/callstream-dev").join(format!("{name}-{hash:016x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_checkout_gets_a_server_state_folder_of_its_own() {
        let a = private_checkout_server_state(Path::new("/root/work/callstream"));
        let b = private_checkout_server_state(Path::new("/root/other/callstream"));
        assert!(a.starts_with("/var/lib/callstream-dev"));
        assert_ne!(a, b);
        assert_eq!(
            a,
            private_checkout_server_state(Path::new("/root/work/callstream"))
        );
        assert!(a
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("callstream-"));
    }

    #[test]
    fn a_folder_only_its_owner_may_enter_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("xtask-private-{}", std::process::id()));
        let inner = dir.join("checkout");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(!others_can_enter(&inner));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(others_can_enter(&inner));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
