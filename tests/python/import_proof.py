"""Records written through a source registry are read after `schemaops import` through schemaops,
with the official Confluent serializers and deserializers and a Kafka-protocol broker (issue 18).

Usage: import_proof.py produce BROKER SOURCE_URL WORKDIR
       import_proof.py consume BROKER TARGET_URL WORKDIR

`produce` builds, in the source registry, one subject per format with versions under chosen,
non-contiguous IDs (written in IMPORT mode), a soft-deleted version, and for Avro a reference to
another subject; then writes records with versions 1 and 2 (the serializers look the schemas up, no
auto-registration) and saves what it wrote in WORKDIR. `consume` reads every topic from offset 0
and decodes each record with the deserializers against the target registry: the same values, and
the same schema IDs in the records. Prints one line per check; exits 1 on any failure.
"""

import json
import os
import sys

import requests
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

PHASE, BROKER, URL, WORKDIR = sys.argv[1:5]
CLIENT = SchemaRegistryClient({"url": URL})
LOOKUP_ONLY = {"auto.register.schemas": False, "use.latest.version": False}
RESULTS = {"passed": 0, "failed": 0}
HEADERS = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def check(name, condition, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(f"{'ok  ' if condition else 'FAIL'} {name}{'' if condition else ': ' + str(detail)}", flush=True)


# --- The schemas: per format, (subject, [(version, id, text)]), version 3 soft-deleted ----------------

MONEY = {"type": "record", "name": "Money", "namespace": "dev.proof",
         "fields": [{"name": "cents", "type": "long"}, {"name": "currency", "type": "string"}]}


def avro_order(extra):
    fields = [{"name": "id", "type": "long"}, {"name": "total", "type": "dev.proof.Money"}] + extra
    return json.dumps({"type": "record", "name": "Order", "namespace": "dev.proof", "fields": fields})


AVRO = [avro_order([]), avro_order([{"name": "note", "type": "string", "default": ""}]),
        avro_order([{"name": "note", "type": "string", "default": ""}, {"name": "x", "type": "int", "default": 0}])]


def json_order(extra):
    properties = {"id": {"type": "integer"}, "item": {"type": "string"}, **extra}
    return json.dumps({"type": "object", "properties": properties, "required": ["id", "item"]})


JSON = [json_order({}), json_order({"note": {"type": "string"}}), json_order({"note": {"type": "string"}, "x": {"type": "integer"}})]
PROTO_FIELDS = [[("id", 1, "int64"), ("item", 2, "string")],
                [("id", 1, "int64"), ("item", 2, "string"), ("note", 3, "string")],
                [("id", 1, "int64"), ("item", 2, "string"), ("note", 3, "string"), ("x", 4, "int64")]]


def proto_text(fields):
    lines = [f"  {kind} {name} = {number};" for name, number, kind in fields]
    return 'syntax = "proto3";\npackage dev.proof;\n\nmessage Order {\n' + "\n".join(lines) + "\n}\n"


IDS = {"avro": [1007, 1042, 1099], "json": [2003, 2050, 2077], "protobuf": [3011, 3064, 3101]}
MONEY_ID = 901


def post(path, body):
    response = requests.post(URL + path, data=json.dumps(body), headers=HEADERS, timeout=10)
    assert response.ok, f"{path}: {response.status_code} {response.text}"
    return response.json()


def build_source():
    requests.put(URL + "/mode?force=true", json={"mode": "IMPORT"}, timeout=10).raise_for_status()
    post("/subjects/proof-money/versions", {"schema": json.dumps(MONEY), "id": MONEY_ID, "version": 1})
    money = [{"name": "dev.proof.Money", "subject": "proof-money", "version": 1}]
    texts = {"avro": AVRO, "json": JSON, "protobuf": [proto_text(fields) for fields in PROTO_FIELDS]}
    types = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}
    for fmt in texts:
        for version, (schema_id, text) in enumerate(zip(IDS[fmt], texts[fmt]), start=1):
            body = {"schema": text, "schemaType": types[fmt], "id": schema_id, "version": version}
            if fmt == "avro":
                body["references"] = money
            post(f"/subjects/proof-{fmt}-value/versions", body)
        requests.delete(f"{URL}/subjects/proof-{fmt}-value/versions/3", timeout=10).raise_for_status()
    requests.put(URL + "/mode", json={"mode": "READWRITE"}, timeout=10).raise_for_status()


def message_class(fields):
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    types = {"int64": 3, "string": 9}
    file = descriptor_pb2.FileDescriptorProto(name=f"order-{len(fields)}.proto", package="dev.proof", syntax="proto3")
    message = file.message_type.add(name="Order")
    for name, number, kind in fields:
        message.field.add(name=name, number=number, type=types[kind], label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("dev.proof.Order"))


def serializer(fmt, version):
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroSerializer

        schema = Schema(AVRO[version - 1], "AVRO", [SchemaReference("dev.proof.Money", "proof-money", 1)])
        return AvroSerializer(CLIENT, schema, conf=LOOKUP_ONLY)
    if fmt == "json":
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        return JSONSerializer(JSON[version - 1], CLIENT, conf=LOOKUP_ONLY)
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    cls = message_class(PROTO_FIELDS[version - 1])
    serialize = ProtobufSerializer(cls, CLIENT, {"use.deprecated.format": False, **LOOKUP_ONLY})
    return lambda record, ctx: serialize(cls(**record), ctx)


def deserializer(fmt):
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        return AvroDeserializer(CLIENT)
    if fmt == "json":
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        return JSONDeserializer(None, schema_registry_client=CLIENT)
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    cls = message_class(PROTO_FIELDS[1])
    decode = ProtobufDeserializer(cls, {"use.deprecated.format": False})
    return lambda payload, ctx: {name: getattr(decode(payload, ctx), name) for name, _, _ in PROTO_FIELDS[1]}


def record(fmt, version, index):
    if fmt == "avro":
        value = {"id": index, "total": {"cents": 100 * index, "currency": "EUR"}}
    else:
        value = {"id": index, "item": f"item-{index}"}
    if version == 2:
        value["note"] = f"v2-{index}"
    return value


def produce():
    build_source()
    producer = Producer({"bootstrap.servers": BROKER, "linger.ms": 5})
    admin = AdminClient({"bootstrap.servers": BROKER})
    topics = [NewTopic(f"proof-{fmt}", num_partitions=1, replication_factor=1) for fmt in IDS]
    for future in admin.create_topics(topics).values():
        future.result(15)
    written = {}
    for fmt in IDS:
        topic = f"proof-{fmt}"
        ctx = SerializationContext(topic, MessageField.VALUE)
        records = []
        failures = []
        for version in (1, 2):
            serialize = serializer(fmt, version)
            for index in range(3):
                value = record(fmt, version, index + 10 * version)
                producer.produce(topic, value=serialize(value, ctx),
                                 on_delivery=lambda error, _: error and failures.append(error))
                records.append({"value": value, "id": IDS[fmt][version - 1]})
        check(f"{fmt}: 6 records written with versions 1 and 2", producer.flush(15) == 0 and not failures, failures)
        written[fmt] = records
    with open(os.path.join(WORKDIR, "written.json"), "w", encoding="utf-8") as file:
        json.dump(written, file)


def read_topic(topic):
    consumer = Consumer({"bootstrap.servers": BROKER, "group.id": f"{topic}-proof", "enable.auto.commit": False,
                         "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values = []
    try:
        while True:
            message = consumer.poll(15)
            assert message is not None, f"no end of partition after {len(values)} records"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return values
            values.append(message.value())
    finally:
        consumer.close()


def consume():
    with open(os.path.join(WORKDIR, "written.json"), encoding="utf-8") as file:
        written = json.load(file)
    for fmt, records in written.items():
        topic = f"proof-{fmt}"
        payloads = read_topic(topic)
        check(f"{fmt}: every record read back", len(payloads) == len(records), len(payloads))
        ids = [int.from_bytes(payload[1:5], "big") for payload in payloads]
        check(f"{fmt}: records carry the source's IDs", ids == [r["id"] for r in records], ids)
        decode = deserializer(fmt)
        ctx = SerializationContext(topic, MessageField.VALUE)
        decoded = [decode(payload, ctx) for payload in payloads]
        expected = [dict(r["value"]) for r in records]
        if fmt == "protobuf":
            expected = [{"note": "", **value} for value in expected]
        check(f"{fmt}: decoded through schemaops as written", decoded == expected, (decoded, expected))


try:
    produce() if PHASE == "produce" else consume()
except Exception as error:  # noqa: BLE001 - reported as a failed check
    check(f"{PHASE} ran", False, repr(error))
print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
sys.exit(1 if RESULTS["failed"] else 0)
