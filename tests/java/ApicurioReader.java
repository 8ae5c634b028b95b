// Reads callstream's topics the way a Java team would: a KafkaConsumer with Apicurio Registry's
// AvroKafkaDeserializer, which takes the schema id from each record's Confluent framing (a 0
// byte and 4 bytes) and fetches the writer's schema from the registry by it.
//
// Run as a single-file program on the jars of xtask/java/apicurio-serde:
//   java -cp '.stack/java/apicurio-serde/libs/*' tests/java/ApicurioReader.java \
//     <bootstrap> <registry URL, e.g. http://127.0.0.1:8085/apis/registry/v3> <topic>=<count>...
// It prints one JSON line per record read, {"topic", "offset", "value"}, with each Avro value
// as plain JSON (records as objects, unions as their branch, enums and strings as strings),
// and exits 0 once every topic has given its count, 1 if they have not after two minutes.

import com.fasterxml.jackson.databind.ObjectMapper;
import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.generic.GenericEnumSymbol;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.Schema;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ApicurioReader {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: ApicurioReader <bootstrap> <registry URL> <topic>=<count>...");
            System.exit(2);
        }
        Map<String, Integer> wanted = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            String[] parts = args[i].split("=", 2);
            wanted.put(parts[0], Integer.parseInt(parts[1]));
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, AvroKafkaDeserializer.class.getName());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put("apicurio.registry.url", args[1]);

        ObjectMapper json = new ObjectMapper();
        Map<String, Integer> seen = new HashMap<>();
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        try (KafkaConsumer<String, Object> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (String topic : wanted.keySet()) {
                consumer.partitionsFor(topic).forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            while (!done(wanted, seen) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, Object> record : consumer.poll(Duration.ofMillis(500))) {
                    Map<String, Object> line = new LinkedHashMap<>();
                    line.put("topic", record.topic());
                    line.put("offset", record.offset());
                    line.put("value", plain(record.value()));
                    System.out.println(json.writeValueAsString(line));
                    seen.merge(record.topic(), 1, Integer::sum);
                }
            }
        }
        System.out.flush();
        if (!done(wanted, seen)) {
            System.err.println("read " + seen + " of " + wanted + " in two minutes");
            System.exit(1);
        }
    }

    static boolean done(Map<String, Integer> wanted, Map<String, Integer> seen) {
        return wanted.entrySet().stream().allMatch(e -> seen.getOrDefault(e.getKey(), 0) >= e.getValue());
    }

    /** An Avro generic value as plain Java values Jackson writes as JSON. */
    static Object plain(Object value) {
        if (value instanceof GenericRecord record) {
            Map<String, Object> fields = new LinkedHashMap<>();
            for (Schema.Field field : record.getSchema().getFields()) {
                fields.put(field.name(), plain(record.get(field.name())));
            }
            return fields;
        }
        if (value instanceof Map<?, ?> map) {
            Map<String, Object> entries = new LinkedHashMap<>();
            map.forEach((k, v) -> entries.put(k.toString(), plain(v)));
            return entries;
        }
        if (value instanceof List<?> list) {
            List<Object> items = new ArrayList<>();
            list.forEach(v -> items.add(plain(v)));
            return items;
        }
        if (value instanceof CharSequence || value instanceof GenericEnumSymbol<?>) {
            return value.toString();
        }
        return value; // null, Boolean, Integer, Long, Float, Double
    }
}
