//! Who may do what on the three-broker cluster: one row per service principal, read from the
//! code of each service (its inputs, outputs, consumer groups and transactional ids), so the
//! table below is the documentation of the cluster's authorization.
//!
//! The cluster runs `StandardAuthorizer` with `allow.everyone.if.no.acl.found=false`: what is
//! not granted here is refused. `admin` is a super user (it creates topics and runs the
//! operators' CLI commands that manage the cluster); the brokers authenticate to each other and
//! to the controllers with the broker certificate, whose principal is a super user too.
//!
//! What every row implies beyond its own lists:
//! - `Describe` on the cluster, for every service principal (`DescribeCluster`, the cluster's
//!   metadata). No `IdempotentWrite`: since Kafka 3.0 (KIP-679) an idempotent producer needs
//!   only `Write` on some topic, and every producer here has that.
//! - A processor of the runtime (`processor: true`) has the app id = its user name, behind the
//!   topic prefix (`cli/src/process_cmd.rs::app_id`). The runtime names everything after it
//!   (`runtime/src/kafka/run.rs`, `restore.rs`): the consumer group `<app>`, and the groups of
//!   its restore and global-table readers `<app>-restore` and `<app>-globals`, so groups
//!   prefixed `<app>`; transactional ids `<app>-<instance>`, prefixed `<app>-`; the changelog
//!   topics `<app>-<store>-changelog`, which it creates when missing, reads to restore and
//!   writes, so topics prefixed `<app>-`; and the dead-letter topic, which it writes (and whose
//!   settings it checks at start). The changelog prefix also matches design topics that start
//!   with an app id: `contact-` matches `contact-commands` (which the contact processor only
//!   reads) and `contact-state` (which it writes), `notifier-` matches `notifier-signals` (the
//!   notifier's own). On such a topic a write or create that the row does not grant is denied
//!   by a literal `DENY` binding (Kafka's deny wins over any allow), so the contact processor
//!   cannot write `contact-commands`.

use std::collections::BTreeSet;
use std::fmt;

/// The logical topics of the design (`platform/src/topics.rs`), spelled as there.
pub mod topic {
    pub const CALL_EVENTS: &str = "call-events";
    pub const CONTACT_COMMANDS: &str = "contact-commands";
    pub const SCHEDULE_REQUESTS: &str = "schedule-requests";
    pub const SCHEDULE_EVENTS: &str = "schedule-events";
    pub const LAUNCH_COMMANDS: &str = "launch-commands";
    pub const CALL_LAUNCHES: &str = "call-launches";
    pub const CRM_COMMANDS: &str = "crm-commands";
    pub const CRM_RESULTS: &str = "crm-results";
    pub const EXCEPTIONS: &str = "exceptions";
    pub const CONTACT_STATE: &str = "contact-state";
    pub const COMPLETION_MISSING: &str = "completion-missing";
    pub const COMPLETION_RESOLVED: &str = "completion-resolved";
    pub const ALERTS: &str = "alerts";
    pub const AUDIT: &str = "audit";
    pub const CONTROL: &str = "control";
    pub const CONTROL_HISTORY: &str = "control-history";
    pub const DEAD_LETTERS: &str = "dead-letters";
    pub const NOTIFICATIONS: &str = "notifications";
    pub const NOTIFIER_SIGNALS: &str = "notifier-signals";
    pub const DELIVERY_PARTIALS: &str = "delivery-partials";

    /// Every one of them (the order of `topics::ALL`).
    pub const ALL: &[&str] = &[
        CALL_EVENTS,
        CONTACT_COMMANDS,
        SCHEDULE_REQUESTS,
        SCHEDULE_EVENTS,
        LAUNCH_COMMANDS,
        CALL_LAUNCHES,
        CRM_COMMANDS,
        CRM_RESULTS,
        EXCEPTIONS,
        CONTACT_STATE,
        COMPLETION_MISSING,
        COMPLETION_RESOLVED,
        ALERTS,
        AUDIT,
        CONTROL,
        CONTROL_HISTORY,
        DEAD_LETTERS,
        DELIVERY_PARTIALS,
        NOTIFICATIONS,
        NOTIFIER_SIGNALS,
    ];
}

use topic::*;

/// A consumer group or transactional id prefix: an app id (behind the topic prefix, as
/// processors name theirs) or a fixed one (the edges name theirs without the prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id {
    App(&'static str),
    Fixed(&'static str),
}

/// What one service principal may do.
#[derive(Debug)]
pub struct Service {
    /// The SCRAM user (`User:<user>`); a processor's app id.
    pub user: &'static str,
    /// Logical topics it consumes: `Read`, `Describe`.
    pub reads: &'static [&'static str],
    /// Logical topics it produces to: `Write`, `Describe`.
    pub writes: &'static [&'static str],
    /// Logical topics whose offsets it only looks at: `Describe`.
    pub describes: &'static [&'static str],
    /// A processor of the runtime: its app-id grants (see the module's documentation).
    pub processor: bool,
    /// Consumer groups it uses beyond a processor's own, by prefix: `Read`, `Describe`.
    pub groups: &'static [Id],
    /// Transactional ids beyond a processor's own, by prefix: `Write`, `Describe`.
    pub transactional_ids: &'static [Id],
    /// Groups whose committed offsets it reads, by prefix: `Describe`.
    pub described_groups: &'static [Id],
}

/// The super user: topics, ACLs, `callstream topics create`, the operators' tools.
pub const ADMIN: &str = "admin";

/// The processors' app ids, whose lag the notifier samples (`processors/notifier/src/lag.rs`).
const PROCESSOR_GROUPS: &[Id] = &[
    Id::App("contact"),
    Id::App("scheduler"),
    Id::App("launch-dispatcher"),
    Id::App("completion-detector"),
    Id::App("crm-dispatcher"),
    Id::App("recovery"),
    Id::App("notifier"),
];

const NONE: &[&str] = &[];

/// One row per service principal. Each list is what the service's code reads or writes
/// (`ProcessorSpec` inputs and global tables, its output topic names); where the design
/// table in docs/design.md says otherwise, the code wins (recovery reads
/// `completion-resolved` and `contact-commands`, the contact processor reads
/// `call-launches`).
pub const SERVICES: &[Service] = &[
    // edges/gateway: webhooks and launch intake, an idempotent producer (no transactions).
    Service {
        user: "gateway",
        reads: NONE,
        writes: &[CALL_EVENTS, CONTACT_COMMANDS],
        describes: NONE,
        processor: false,
        groups: &[],
        transactional_ids: &[],
        described_groups: &[],
    },
    Service {
        user: "contact",
        reads: &[CALL_EVENTS, CONTACT_COMMANDS, CALL_LAUNCHES, CONTROL],
        writes: &[
            SCHEDULE_REQUESTS,
            LAUNCH_COMMANDS,
            CRM_COMMANDS,
            EXCEPTIONS,
            AUDIT,
            CONTACT_STATE,
        ],
        describes: NONE,
        processor: true,
        groups: &[],
        transactional_ids: &[],
        described_groups: &[],
    },
    Service {
        user: "scheduler",
        reads: &[SCHEDULE_REQUESTS, CONTROL],
        writes: &[SCHEDULE_EVENTS, CONTACT_COMMANDS, EXCEPTIONS],
        describes: NONE,
        processor: true,
        groups: &[],
        transactional_ids: &[],
        described_groups: &[],
    },
    Service {
        user: "launch-dispatcher",
        reads: &[LAUNCH_COMMANDS, CONTROL],
        writes: &[CALL_LAUNCHES, EXCEPTIONS, AUDIT],
        describes: NONE,
        processor: true,
        groups: &[],
        transactional_ids: &[],
        described_groups: &[],
    },
    Service {
        user: "completion-detector",
        reads: &[CALL_LAUNCHES, CALL_EVENTS, DELIVERY_PARTIALS, CONTROL],
        writes: &[
            COMPLETION_MISSING,
            COMPLETION_RESOLVED,
            EXCEPTIONS,
            ALERTS,
            DELIVERY_PARTIALS,
        ],
        describes: NONE,
        processor: true,
        groups: &[],
        transactional_ids: &[],
        described_groups: &[],
    },
    Service {
        user: "recovery",
        reads: &[COMPLETION_MISSING, COMPLETION_RESOLVED, CONTACT_COMMANDS],
        writes: &[CALL_EVENTS, COMPLETION_RESOLVED, EXCEPTIONS, AUDIT],
        describes: NONE,
        processor: true,
        groups: &[],
        transactional_ids: &[],
        described_groups: &[],
    },
    Service {
        user: "crm-dispatcher",
        reads: &[CRM_COMMANDS, CONTROL],
        writes: &[CRM_RESULTS, EXCEPTIONS, AUDIT],
        describes: NONE,
        processor: true,
        groups: &[],
        transactional_ids: &[],
        described_groups: &[],
    },
    // The notifier's lag sampler reads every processor group's committed offsets and the end
    // offsets of every design topic.
    Service {
        user: "notifier",
        reads: &[
            ALERTS,
            EXCEPTIONS,
            DEAD_LETTERS,
            NOTIFICATIONS,
            NOTIFIER_SIGNALS,
            CONTROL,
        ],
        writes: &[NOTIFICATIONS, NOTIFIER_SIGNALS, ALERTS, AUDIT, EXCEPTIONS],
        describes: topic::ALL,
        processor: true,
        groups: &[],
        transactional_ids: &[],
        described_groups: PROCESSOR_GROUPS,
    },
    // projections: assigns partitions itself and keeps offsets in Postgres; librdkafka wants
    // a group id all the same (`<client id>-unused-group`, `<client id>-lag-unused-group`).
    Service {
        user: "projections",
        reads: &[
            CALL_EVENTS,
            CONTACT_COMMANDS,
            SCHEDULE_REQUESTS,
            SCHEDULE_EVENTS,
            LAUNCH_COMMANDS,
            CALL_LAUNCHES,
            CRM_COMMANDS,
            CRM_RESULTS,
            EXCEPTIONS,
            COMPLETION_MISSING,
            COMPLETION_RESOLVED,
            AUDIT,
            CONTACT_STATE,
            CONTROL,
            CONTROL_HISTORY,
            DEAD_LETTERS,
        ],
        // An unappliable record opens an exception (projections/src/report.rs).
        writes: &[EXCEPTIONS],
        describes: NONE,
        processor: false,
        groups: &[Id::Fixed("callstream-projections")],
        transactional_ids: &[],
        described_groups: &[],
    },
    // edges/operator-api: commands and control changes, in transactions; a dead letter's
    // replay goes back to the topic it came from, which is a processor's input.
    Service {
        user: "operator-api",
        reads: NONE,
        writes: &[
            CONTACT_COMMANDS,
            CONTROL,
            CONTROL_HISTORY,
            AUDIT,
            EXCEPTIONS,
            CRM_COMMANDS,
            // dead-letter replays:
            CALL_EVENTS,
            CALL_LAUNCHES,
            SCHEDULE_REQUESTS,
            LAUNCH_COMMANDS,
            COMPLETION_MISSING,
            COMPLETION_RESOLVED,
            ALERTS,
            DEAD_LETTERS,
            NOTIFICATIONS,
            NOTIFIER_SIGNALS,
            DELIVERY_PARTIALS,
        ],
        describes: NONE,
        processor: false,
        groups: &[],
        transactional_ids: &[Id::Fixed("callstream-operator-api-tx-")],
        described_groups: &[],
    },
    // edges/control, `callstream control apply|show`: reads the table with a throw-away group,
    // writes each change with its history in one transaction.
    Service {
        user: "control",
        reads: &[CONTROL],
        writes: &[CONTROL, CONTROL_HISTORY],
        describes: NONE,
        processor: false,
        groups: &[Id::Fixed("callstream-control-reader-")],
        transactional_ids: &[Id::Fixed("callstream-control-apply-")],
        described_groups: &[],
    },
];

/// Every SCRAM user of the cluster: `admin` first, then each service.
pub fn users() -> Vec<&'static str> {
    std::iter::once(ADMIN)
        .chain(SERVICES.iter().map(|s| s.user))
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    Cluster,
    Topic,
    Group,
    TransactionalId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pattern {
    Literal,
    Prefixed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Read,
    Write,
    Create,
    Describe,
    DescribeConfigs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    Allow,
    Deny,
}

/// One ACL: `principal` is allowed (or denied) `op` on the resource, from any host.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Binding {
    pub principal: String,
    pub resource: Resource,
    pub pattern: Pattern,
    pub name: String,
    pub op: Op,
    pub permission: Permission,
}

/// The cluster resource's name in Kafka.
const CLUSTER_NAME: &str = "kafka-cluster";

impl fmt::Display for Binding {
    /// Tab-separated, in the Java client's enum names: what xtask/kafka/ClusterAdmin.java reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let resource = match self.resource {
            Resource::Cluster => "CLUSTER",
            Resource::Topic => "TOPIC",
            Resource::Group => "GROUP",
            Resource::TransactionalId => "TRANSACTIONAL_ID",
        };
        let pattern = match self.pattern {
            Pattern::Literal => "LITERAL",
            Pattern::Prefixed => "PREFIXED",
        };
        let op = match self.op {
            Op::Read => "READ",
            Op::Write => "WRITE",
            Op::Create => "CREATE",
            Op::Describe => "DESCRIBE",
            Op::DescribeConfigs => "DESCRIBE_CONFIGS",
        };
        let permission = match self.permission {
            Permission::Allow => "ALLOW",
            Permission::Deny => "DENY",
        };
        write!(
            f,
            "{}\t{resource}\t{pattern}\t{}\t{op}\t{permission}",
            self.principal, self.name
        )
    }
}

/// Every binding of the table, for topics named behind `prefix` (`CALLSTREAM_TOPIC_PREFIX`;
/// processors' app ids carry it too), sorted and without duplicates.
pub fn bindings(prefix: &str) -> BTreeSet<Binding> {
    let mut out = BTreeSet::new();
    let id = |id: &Id| match id {
        Id::App(app) => format!("{prefix}{app}"),
        Id::Fixed(name) => (*name).to_string(),
    };
    for service in SERVICES {
        let principal = format!("User:{}", service.user);
        let mut granted = BTreeSet::new();
        let mut add = |resource, pattern, name: String, ops: &[Op]| {
            for &op in ops {
                granted.insert(Binding {
                    principal: principal.clone(),
                    resource,
                    pattern,
                    name: name.clone(),
                    op,
                    permission: Permission::Allow,
                });
            }
        };
        use Op::*;
        use Pattern::*;
        use Resource::*;
        add(Cluster, Literal, CLUSTER_NAME.into(), &[Describe]);
        for t in service.reads {
            add(Topic, Literal, format!("{prefix}{t}"), &[Read, Describe]);
        }
        for t in service.writes {
            add(Topic, Literal, format!("{prefix}{t}"), &[Write, Describe]);
        }
        for t in service.describes {
            add(Topic, Literal, format!("{prefix}{t}"), &[Describe]);
        }
        if service.processor {
            let app = format!("{prefix}{}", service.user);
            add(Group, Prefixed, app.clone(), &[Read, Describe]);
            add(
                TransactionalId,
                Prefixed,
                format!("{app}-"),
                &[Write, Describe],
            );
            add(Topic, Prefixed, format!("{app}-"), CHANGELOG_OPS);
            let dead_letters = format!("{prefix}{DEAD_LETTERS}");
            add(
                Topic,
                Literal,
                dead_letters,
                &[Write, Describe, DescribeConfigs],
            );
        }
        for g in service.groups {
            add(Group, Prefixed, id(g), &[Read, Describe]);
        }
        for t in service.transactional_ids {
            add(TransactionalId, Prefixed, id(t), &[Write, Describe]);
        }
        for g in service.described_groups {
            add(Group, Prefixed, id(g), &[Describe]);
        }
        if service.processor {
            let changelog_prefix = format!("{}-", service.user);
            for t in topic::ALL
                .iter()
                .filter(|t| t.starts_with(&changelog_prefix))
            {
                let name = format!("{prefix}{t}");
                // Only what changes a topic: a read or describe the row lacks is harmless.
                for op in [Op::Write, Op::Create] {
                    let literal = |b: &Binding| {
                        b.resource == Topic && b.pattern == Literal && b.name == name && b.op == op
                    };
                    if !granted.iter().any(literal) {
                        out.insert(Binding {
                            principal: principal.clone(),
                            resource: Topic,
                            pattern: Literal,
                            name: name.clone(),
                            op,
                            permission: Permission::Deny,
                        });
                    }
                }
            }
        }
        out.extend(granted);
    }
    out
}

/// What a processor may do on topics behind its changelog prefix.
const CHANGELOG_OPS: &[Op] = &[
    Op::Create,
    Op::Describe,
    Op::DescribeConfigs,
    Op::Read,
    Op::Write,
];

/// The file ClusterAdmin.java applies: a comment, then one binding a line.
pub fn render(prefix: &str) -> String {
    let mut text = format!(
        "# Generated by `cargo xtask up --cluster` from xtask/src/cluster/acls.rs (topic prefix {prefix:?}).\n\
         # principal\tresource\tpattern\tname\toperation\tpermission\n"
    );
    for binding in bindings(prefix) {
        text.push_str(&binding.to_string());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(
        bindings: &BTreeSet<Binding>,
        user: &str,
        res: Resource,
        name: &str,
        op: Op,
    ) -> bool {
        let principal = format!("User:{user}");
        let matches = |b: &&Binding| {
            b.principal == principal
                && b.resource == res
                && b.op == op
                && match b.pattern {
                    Pattern::Literal => b.name == name,
                    Pattern::Prefixed => name.starts_with(&b.name),
                }
        };
        // As Kafka decides: a matching deny wins over any allow.
        let mut found = bindings.iter().filter(matches);
        found.clone().any(|b| b.permission == Permission::Allow)
            && !found.any(|b| b.permission == Permission::Deny)
    }

    #[test]
    fn a_changelog_prefix_never_lets_a_processor_write_a_design_topic_it_only_reads() {
        let b = bindings("t1-");
        use Op::*;
        use Resource::Topic;
        assert!(allowed(&b, "contact", Topic, "t1-contact-commands", Read));
        assert!(!allowed(&b, "contact", Topic, "t1-contact-commands", Write));
        assert!(!allowed(
            &b,
            "contact",
            Topic,
            "t1-contact-commands",
            Create
        ));
        assert!(allowed(&b, "contact", Topic, "t1-contact-state", Write));
        assert!(allowed(
            &b,
            "contact",
            Topic,
            "t1-contact-contacts-changelog",
            Write
        ));
        assert!(allowed(&b, "notifier", Topic, "t1-notifier-signals", Write));
        assert!(allowed(&b, "notifier", Topic, "t1-notifier-signals", Read));
        // Every design topic's writers are exactly the rows that list it.
        for t in topic::ALL {
            for s in SERVICES {
                let may = allowed(&b, s.user, Topic, &format!("t1-{t}"), Write);
                let dead_letters = s.processor && *t == DEAD_LETTERS;
                assert_eq!(
                    may,
                    s.writes.contains(t) || dead_letters,
                    "{} on {t}",
                    s.user
                );
            }
        }
    }

    /// xtask does not depend on the platform crate (it builds before anything else), so the
    /// table's topic names are held to the platform's by reading its source.
    #[test]
    fn the_topic_names_are_the_platforms() {
        let source = include_str!("../../../platform/src/topics.rs");
        let platform: BTreeSet<&str> = source
            .lines()
            .filter_map(|line| line.strip_prefix("pub const "))
            .filter_map(|rest| rest.split_once(": &str = \""))
            .filter_map(|(_, value)| value.strip_suffix("\";"))
            .collect();
        let ours: BTreeSet<&str> = topic::ALL.iter().copied().collect();
        assert_eq!(ours, platform);
        assert_eq!(ours.len(), topic::ALL.len());
    }

    #[test]
    fn every_service_is_a_distinct_user_and_names_only_design_topics() {
        let users = users();
        let unique: BTreeSet<_> = users.iter().collect();
        assert_eq!(unique.len(), users.len());
        assert_eq!(users.len(), 12, "admin and eleven services");
        for s in SERVICES {
            for t in s.reads.iter().chain(s.writes).chain(s.describes) {
                assert!(topic::ALL.contains(t), "{}: {t}", s.user);
            }
        }
    }

    #[test]
    fn the_gateway_writes_its_topics_and_nothing_else() {
        let b = bindings("");
        use Op::*;
        use Resource::Topic;
        assert!(allowed(&b, "gateway", Topic, "call-events", Write));
        assert!(allowed(&b, "gateway", Topic, "contact-commands", Write));
        for t in topic::ALL
            .iter()
            .filter(|t| !["call-events", "contact-commands"].contains(t))
        {
            assert!(!allowed(&b, "gateway", Topic, t, Write), "{t}");
        }
        for t in topic::ALL {
            assert!(!allowed(&b, "gateway", Topic, t, Read), "{t}");
        }
        assert!(!allowed(&b, "gateway", Resource::Group, "gateway", Read));
    }

    #[test]
    fn a_processor_owns_its_group_transactional_ids_and_changelogs_behind_the_prefix() {
        let b = bindings("t1-");
        use Op::*;
        use Resource::*;
        assert!(allowed(&b, "scheduler", Group, "t1-scheduler", Read));
        assert!(allowed(
            &b,
            "scheduler",
            Group,
            "t1-scheduler-restore",
            Read
        ));
        assert!(allowed(
            &b,
            "scheduler",
            TransactionalId,
            "t1-scheduler-0",
            Write
        ));
        assert!(allowed(
            &b,
            "scheduler",
            Topic,
            "t1-scheduler-grid-changelog",
            Create
        ));
        assert!(allowed(&b, "scheduler", Topic, "t1-dead-letters", Write));
        assert!(allowed(
            &b,
            "scheduler",
            Topic,
            "t1-schedule-requests",
            Read
        ));
        // Not another's, nor the unprefixed names.
        assert!(!allowed(&b, "scheduler", Group, "t1-contact", Read));
        assert!(!allowed(
            &b,
            "scheduler",
            TransactionalId,
            "t1-contact-0",
            Write
        ));
        assert!(!allowed(
            &b,
            "scheduler",
            Topic,
            "t1-contact-contacts-changelog",
            Read
        ));
        assert!(!allowed(&b, "scheduler", Topic, "schedule-requests", Read));
        assert!(!allowed(&b, "scheduler", Topic, "t1-call-launches", Write));
    }

    #[test]
    fn every_design_topic_has_a_writer_and_a_reader() {
        let b = bindings("");
        for t in topic::ALL {
            let writers = SERVICES
                .iter()
                .filter(|s| allowed(&b, s.user, Resource::Topic, t, Op::Write))
                .count();
            let readers = SERVICES
                .iter()
                .filter(|s| allowed(&b, s.user, Resource::Topic, t, Op::Read))
                .count();
            assert!(writers > 0, "nobody writes {t}");
            assert!(readers > 0, "nobody reads {t}");
        }
    }

    #[test]
    fn the_rendered_file_has_one_tab_separated_binding_a_line() {
        let text = render("");
        let lines: Vec<_> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(lines.len(), bindings("").len());
        assert!(lines.iter().all(|l| l.split('\t').count() == 6));
        assert!(lines.contains(&"User:gateway\tTOPIC\tLITERAL\tcall-events\tWRITE\tALLOW"));
        assert!(lines.contains(
            &"User:control\tTRANSACTIONAL_ID\tPREFIXED\tcallstream-control-apply-\tWRITE\tALLOW"
        ));
        assert!(lines.contains(&"User:notifier\tGROUP\tPREFIXED\tcontact\tDESCRIBE\tALLOW"));
    }

    /// docker-compose.yml's `acls` service applies deploy/kafka/acls.tsv: this table without a
    /// topic prefix, as `render("")` writes it. After a change to the table, write the file
    /// anew with `XTASK_WRITE_DEPLOY_ACLS=1 cargo test -p xtask deploy_acls` and check it in.
    #[test]
    fn the_deploy_acls_file_is_the_rendered_table() {
        let rendered = render("");
        if std::env::var_os("XTASK_WRITE_DEPLOY_ACLS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/kafka/acls.tsv");
            std::fs::write(path, &rendered).unwrap();
            return;
        }
        assert!(
            include_str!("../../../deploy/kafka/acls.tsv") == rendered,
            "deploy/kafka/acls.tsv is not the table of xtask/src/cluster/acls.rs: write it anew \
             with `XTASK_WRITE_DEPLOY_ACLS=1 cargo test -p xtask deploy_acls` and check it in"
        );
    }
}
