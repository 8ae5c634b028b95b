// What `cargo xtask up --cluster` asks of the running cluster, through Kafka's own Admin client
// (run from source by the JDK's launcher: `java -cp '.stack/kafka/libs/*' ClusterAdmin.java`):
//
//   ClusterAdmin.java ADMIN_PROPERTIES NODE_IDS TIMEOUT_SECONDS [ACL_FILE]
//
// 1. waits until every broker of NODE_IDS (`1,2,3`) is listed by the cluster (DescribeCluster
//    lists only registered, unfenced ones) and answers a request of its own (DescribeConfigs
//    of its broker resource), saying how far it is as that changes;
// 2. makes the cluster's ACLs exactly those of ACL_FILE (written by xtask from
//    xtask/src/cluster/acls.rs: one `principal resource pattern name operation permission`
//    a line, tab-separated): creates the missing ones and deletes the others.
//
// Progress goes to stdout (one line a step), failures to stderr; exit code 0 when done.

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeAclsOptions;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

public class ClusterAdmin {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: ClusterAdmin.java ADMIN_PROPERTIES NODE_IDS TIMEOUT_SECONDS [ACL_FILE]");
            System.exit(64);
        }
        Properties props = new Properties();
        try (var in = Files.newInputStream(Path.of(args[0]))) {
            props.load(in);
        }
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
        Set<Integer> expected = new TreeSet<>();
        for (String id : args[1].split(",")) {
            expected.add(Integer.parseInt(id.trim()));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[2]));
        try (Admin admin = Admin.create(props)) {
            waitForBrokers(admin, expected, deadline);
            if (args.length > 3) {
                // A broker that has just registered may not serve ACL requests yet
                // (its authorizer loads from the metadata log): retry until the deadline.
                while (true) {
                    try {
                        applyAcls(admin, Path.of(args[3]));
                        break;
                    } catch (ExecutionException e) {
                        if (System.nanoTime() > deadline) {
                            throw e;
                        }
                        System.out.println("cluster: applying the ACLs failed (" + e.getCause() + "); retrying");
                        Thread.sleep(1000);
                    }
                }
            }
        }
    }

    // Waits until every broker of `expected` is listed by the cluster (registered, unfenced)
    // and answers a request sent to it. The listing alone is not enough after a restart: a
    // killed broker stays listed until its session times out.
    static void waitForBrokers(Admin admin, Set<Integer> expected, long deadline) throws InterruptedException {
        String seen = "";
        String lastError = "no answer yet";
        long nextNote = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            Set<Integer> listed = new TreeSet<>();
            Set<Integer> answering = new TreeSet<>();
            try {
                Collection<Node> nodes = admin.describeCluster(new DescribeClusterOptions().timeoutMs(5000))
                        .nodes().get();
                nodes.forEach(n -> listed.add(n.id()));
                for (int id : expected) {
                    if (!listed.contains(id)) {
                        continue;
                    }
                    try {
                        admin.describeConfigs(
                                List.of(new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(id))),
                                new DescribeConfigsOptions().timeoutMs(3000)).all().get();
                        answering.add(id);
                    } catch (ExecutionException e) {
                        lastError = "broker " + id + ": " + e.getCause();
                    }
                }
            } catch (ExecutionException e) {
                lastError = String.valueOf(e.getCause());
            }
            String now = "registered " + listed + ", answering " + answering;
            if (!now.equals(seen)) {
                seen = now;
                System.out.println("cluster: " + answering.size() + " of " + expected.size() + " brokers ready ("
                        + now + ")");
            }
            if (answering.containsAll(expected)) {
                return;
            }
            if (System.nanoTime() > deadline) {
                System.err.println("cluster: timed out waiting for brokers " + expected + " (" + now
                        + "; last error: " + lastError + ")");
                System.exit(2);
            }
            if (System.nanoTime() > nextNote) {
                System.out.println("cluster: still waiting for brokers " + expected + " (" + lastError + ")");
                nextNote = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            }
            Thread.sleep(300);
        }
    }

    static void applyAcls(Admin admin, Path file) throws Exception {
        Set<AclBinding> wanted = new HashSet<>();
        for (String line : Files.readAllLines(file)) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\t");
            if (f.length != 6) {
                throw new IllegalArgumentException("not 6 tab-separated fields: " + line);
            }
            wanted.add(new AclBinding(
                    new ResourcePattern(ResourceType.valueOf(f[1]), f[3], PatternType.valueOf(f[2])),
                    new AccessControlEntry(f[0], "*", AclOperation.valueOf(f[4]),
                            AclPermissionType.valueOf(f[5]))));
        }
        Collection<AclBinding> existing = admin
                .describeAcls(AclBindingFilter.ANY, new DescribeAclsOptions()).values().get();
        List<AclBinding> add = new ArrayList<>();
        for (AclBinding b : wanted) {
            if (!existing.contains(b)) {
                add.add(b);
            }
        }
        List<AclBindingFilter> remove = new ArrayList<>();
        for (AclBinding b : existing) {
            if (!wanted.contains(b)) {
                remove.add(b.toFilter());
            }
        }
        if (!add.isEmpty()) {
            admin.createAcls(add).all().get();
        }
        if (!remove.isEmpty()) {
            admin.deleteAcls(remove).all().get();
        }
        System.out.println("cluster: " + wanted.size() + " ACLs in force (" + add.size() + " added, "
                + remove.size() + " removed)");
    }
}
