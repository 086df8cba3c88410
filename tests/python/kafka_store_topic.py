"""Writes a store topic for tests/kafka_store_reader.rs with the official Confluent Python client.

Usage: kafka_store_topic.py BOOTSTRAP TOPIC RECORDS_FILE

Creates TOPIC (one partition, cleanup.policy=compact) and writes the records of RECORDS_FILE
(the format of tests/fixtures/kafka-store/README.md) in three ways: the first half outside any
transaction, as Confluent and Karapace write; then a transaction that is aborted; then the
second half in one committed transaction; then a transaction left open and fenced by a second
producer with the same transactional.id, which commits a noop after it. The aborted and the
fenced transactions each hold one SCHEMA record of subject "must-not-appear". Prints "ok".
"""

import sys

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, topic, records_file = sys.argv[1:4]

records = []
with open(records_file, encoding="utf-8") as lines:
    meaningful = [line.rstrip("\n") for line in lines if line.strip() and not line.startswith("#")]
for key_line, value_line in zip(meaningful[0::2], meaningful[1::2]):
    key = key_line.removeprefix("key ").encode()
    value = None if value_line == "tombstone" else value_line.removeprefix("value ").encode()
    records.append((key, value))

admin = AdminClient({"bootstrap.servers": bootstrap})
for future in admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})]).values():
    future.result(30)

half = len(records) // 2
plain = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
for key, value in records[:half]:
    plain.produce(topic, key=key, value=value, partition=0)
    plain.flush(30)

unwanted_key = b'{"keytype":"SCHEMA","subject":"must-not-appear","version":1,"magic":1}'
unwanted_value = (
    b'{"subject":"must-not-appear","version":1,"id":99,"schemaType":"AVRO","schema":"\\"int\\"","deleted":false}'
)


def transactional():
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": "schemaops-test-writer"})


first = transactional()
first.init_transactions(30)
first.begin_transaction()
first.produce(topic, key=unwanted_key, value=unwanted_value, partition=0)
first.flush(30)
first.abort_transaction(30)

first.begin_transaction()
for key, value in records[half:]:
    first.produce(topic, key=key, value=value, partition=0)
first.commit_transaction(30)

first.begin_transaction()
first.produce(topic, key=unwanted_key, value=unwanted_value, partition=0)
first.flush(30)

second = transactional()
second.init_transactions(30)
second.begin_transaction()
second.produce(topic, key=b'{"keytype":"NOOP","magic":0}', value=None, partition=0)
second.commit_transaction(30)
print("ok")
