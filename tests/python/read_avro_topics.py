"""Reads callstream topics the way a downstream team in Python does: confluent-kafka's
consumer and its AvroDeserializer, which fetches each record's writer schema from the
schema registry by the id in the Confluent wire format.

    read_avro_topics.py BOOTSTRAP REGISTRY_URL TOPIC=COUNT [TOPIC=COUNT ...]

Prints one JSON line per record, {"topic", "partition", "offset", "value"}, with the value as
fastavro decoded it, made JSON: timestamps as epoch milliseconds, UUIDs as strings. Exits
non-zero if a topic does not give COUNT records within 240 seconds.
"""

import datetime
import faulthandler
import json
import sys
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def plain(value):
    if isinstance(value, datetime.datetime):
        return (value - EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def main():
    # A hang says where it is: every thread's stack on stderr, then exit.
    faulthandler.dump_traceback_later(280, exit=True)
    bootstrap, registry_url, *wanted = sys.argv[1:]
    counts = {}
    for spec in wanted:
        topic, count = spec.rsplit("=", 1)
        counts[topic] = int(count)
    # A request the registry leaves unanswered times out and is retried (the client retries
    # transport errors), instead of hanging the reader.
    deserializer = AvroDeserializer(
        SchemaRegistryClient({"url": registry_url, "timeout": 10, "max.retries": 5})
    )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"downstream-python-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    # Partitions assigned, not subscribed: no group to join or leave on a loaded machine.
    assignment = []
    for topic in counts:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        assignment += [
            TopicPartition(topic, partition, OFFSET_BEGINNING)
            for partition in metadata.partitions
        ]
    consumer.assign(assignment)
    seen = {topic: 0 for topic in counts}
    deadline = time.monotonic() + 240
    while any(seen[t] < counts[t] for t in counts):
        if time.monotonic() > deadline:
            short = {t: f"{seen[t]}/{counts[t]}" for t in counts if seen[t] < counts[t]}
            sys.exit(f"timed out; records read per topic: {short}")
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            if message.error().code() != KafkaError._PARTITION_EOF:
                print(f"consumer error: {message.error()}", file=sys.stderr)
            continue
        topic = message.topic()
        value = deserializer(
            message.value(), SerializationContext(topic, MessageField.VALUE)
        )
        seen[topic] += 1
        print(
            json.dumps(
                {
                    "topic": topic,
                    "partition": message.partition(),
                    "offset": message.offset(),
                    "value": plain(value),
                }
            ),
            flush=True,
        )
    consumer.close()


if __name__ == "__main__":
    main()
