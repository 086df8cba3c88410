"""Writes a small store topic in compressed record batches, for tests/kafka_compressed_batches.rs.

Usage: kafka_compressed_topic.py BOOTSTRAP TOPIC CODEC

Creates TOPIC (one partition, cleanup.policy=compact) and writes, with the official Confluent
Python client and compression.type=CODEC (gzip, snappy, lz4 or zstd), a global compatibility
level and three schemas of subject "orders-value", all in one batch (a long linger.ms), as
a Confluent or Karapace producer configured with that compression.type would. Prints "ok".
"""

import json
import sys

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, topic, codec = sys.argv[1:4]

admin = AdminClient({"bootstrap.servers": bootstrap})
for future in admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})]).values():
    future.result(30)

producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 1000})
producer.produce(
    topic, key=b'{"keytype":"CONFIG","magic":0}', value=b'{"compatibilityLevel":"FULL"}', partition=0
)
for version, fields in enumerate([["id"], ["id", "note"], ["id", "note", "extra"]], start=1):
    schema = json.dumps(
        {"type": "record", "name": "Order", "fields": [{"name": f, "type": "string", "default": ""} for f in fields]}
    )
    key = json.dumps({"keytype": "SCHEMA", "subject": "orders-value", "version": version, "magic": 1})
    value = json.dumps(
        {"subject": "orders-value", "version": version, "id": 10 + version, "schemaType": "AVRO",
         "schema": schema, "deleted": False}
    )
    producer.produce(topic, key=key.encode(), value=value.encode(), partition=0)
if producer.flush(30) != 0:
    sys.exit("records were not delivered")
print("ok")
