"""Schemas evolving under `schemaops apply` while real producers and consumers use a real
Kafka-protocol broker, with the official Confluent serializers (issue 9).

Usage: kafka_evolution.py BROKER REGISTRY_URL SCHEMAOPS WORKDIR FORMAT
  BROKER       host:port of a Kafka-protocol broker (tests/support/broker.rs starts Tansu)
  REGISTRY_URL the registry `schemaops apply --registry-url` writes to and the serializers read
  SCHEMAOPS    the schemaops binary
  WORKDIR      an empty folder for the manifests and `apply`'s data folders
  FORMAT       avro, json or protobuf

For each compatibility mode (BACKWARD, FORWARD, FULL) one scenario, on its own topic and subject:
  1. `apply` a SubjectConfig with the mode and Schema v1;
  2. a producer writes N v1 records (the serializer looks the schema up: no auto-registration);
  3. `apply` v2 (an edit of the same Schema object), compatible under the mode;
  4. a producer writes N v2 records;
  5. the whole topic is read from offset 0 and decoded by the readers the mode promises (and,
     for the reader it does not promise, the break is shown);
  6. `apply` an incompatible v3 is refused with every incompatibility in the status; a producer
     auto-registering v3 gets HTTP 409, and the topic still holds only the v1 and v2 records.
Prints one line per check and `N passed, N failed` at the end; exits 1 on any failure.
"""

import json
import os
import subprocess
import sys
import traceback

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

BROKER, URL, SCHEMAOPS, WORKDIR, FORMAT = sys.argv[1:6]
CLIENT = SchemaRegistryClient({"url": URL})
RECORDS = 5
# Written after the refused v3 attempt, so a read that ends at it has seen everything before it.
SENTINEL = b"end-of-scenario"
LOOKUP_ONLY = {"auto.register.schemas": False, "use.latest.version": False}
AUTO_REGISTER = {"auto.register.schemas": True, "use.latest.version": False}
RESULTS = {"passed": 0, "failed": 0}


class Skip(Exception):
    """An earlier step of the scenario failed; the later ones cannot run."""


def value(name, version, index):
    """The value record `index` written with `version` holds in field `name`."""
    return {
        "rsvp_id": version * 1000 + index,
        "event_id": f"event-{index}",
        "member_id": 500 + index,
        "guests": index % 4,
        "note": f"note {version}.{index}",
        "venue": f"venue {index}",
    }[name]


# --- Avro -----------------------------------------------------------------------------------------

def avro_field(name, kind, **default):
    return {"name": name, "type": kind, **default}


AVRO_ID, AVRO_EVENT, AVRO_MEMBER = avro_field("rsvp_id", "long"), avro_field("event_id", "string"), \
    avro_field("member_id", "long")
AVRO_GUESTS = avro_field("guests", "int", default=0)
AVRO_NOTE = avro_field("note", "string", default="")
AVRO_VENUE = avro_field("venue", "string")


class Avro:
    """Records are dicts; the reader schema is given to the deserializer, so missing fields take
    the reader's defaults and a field the reader lacks a default for makes decoding fail."""

    schema_type = "AVRO"

    @staticmethod
    def schema(fields):
        return {"type": "record", "name": "Rsvp", "namespace": "dev.schemaops.examples", "fields": fields}

    @staticmethod
    def text(schema):
        return json.dumps(schema, indent=2)

    def serializer(self, schema, conf):
        from confluent_kafka.schema_registry.avro import AvroSerializer

        return AvroSerializer(CLIENT, self.text(schema), conf=conf)

    def deserializer(self, schema):
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        return AvroDeserializer(CLIENT, schema_str=self.text(schema))

    @staticmethod
    def record(schema, version, index):
        return {f["name"]: value(f["name"], version, index) for f in schema["fields"]}

    @staticmethod
    def expected(reader, written):
        return {f["name"]: written.get(f["name"], f.get("default")) for f in reader["fields"]}

    @staticmethod
    def decoded(reader, decoded):
        return decoded

    fails_for_unpromised_readers = True
    reading = "shared fields kept, missing ones take the reader's defaults"


# --- JSON Schema ----------------------------------------------------------------------------------

def json_schema(properties, required, additional=False):
    """An object schema; `properties` maps each property to its JSON type."""
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Rsvp", "type": "object",
            "properties": {name: {"type": kind} for name, kind in properties.items()},
            "required": required, "additionalProperties": additional}


JSON_FIELDS = {"rsvp_id": "integer", "event_id": "string", "member_id": "integer", "guests": "integer",
               "note": "string", "venue": "string"}


def json_fields(*names, **changed):
    """The named properties with their usual types, and `changed` ones with other types."""
    return {name: JSON_FIELDS[name] for name in names} | changed


class Json:
    """Records are dicts; the deserializer validates each against the reader's schema and
    returns the record as written (JSON Schema has no reader-side defaults)."""

    schema_type = "JSON"

    @staticmethod
    def text(schema):
        return json.dumps(schema, indent=2)

    def serializer(self, schema, conf):
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        return JSONSerializer(self.text(schema), CLIENT, conf=conf)

    def deserializer(self, schema):
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        return JSONDeserializer(self.text(schema))

    @staticmethod
    def record(schema, version, index):
        return {name: value(name, version, index) for name in schema["properties"]}

    @staticmethod
    def expected(reader, written):
        return written

    @staticmethod
    def decoded(reader, decoded):
        return decoded

    fails_for_unpromised_readers = True
    reading = "each valid under the reader's schema, decoded as written"


# --- Protobuf -------------------------------------------------------------------------------------

class Protobuf:
    """A schema is a list of (name, number, type); the .proto text for the manifest and the message
    class for the serializers are both made from it (the class from a FileDescriptorProto, no
    protoc). Every proto3 field is optional: a field the writer lacks decodes as its zero value,
    so no reader ever fails; what a mode promises shows in which values survive."""

    schema_type = "PROTOBUF"
    TYPES = {"int64": 3, "int32": 5, "string": 9, "double": 1}  # FieldDescriptorProto.Type

    def __init__(self):
        self.classes = {}

    @staticmethod
    def text(fields):
        lines = [f"  {kind} {name} = {number};" for name, number, kind in fields]
        return 'syntax = "proto3";\npackage dev.schemaops.examples;\n\nmessage Rsvp {\n' + "\n".join(lines) + "\n}\n"

    def message_class(self, fields):
        key = tuple(fields)
        if key not in self.classes:
            from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

            file = descriptor_pb2.FileDescriptorProto(name=f"rsvp-{len(self.classes)}.proto",
                                                      package="dev.schemaops.examples", syntax="proto3")
            message = file.message_type.add(name="Rsvp")
            for name, number, kind in fields:
                message.field.add(name=name, number=number, type=self.TYPES[kind],
                                  label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
            pool = descriptor_pool.DescriptorPool()
            pool.Add(file)
            descriptor = pool.FindMessageTypeByName("dev.schemaops.examples.Rsvp")
            self.classes[key] = message_factory.GetMessageClass(descriptor)
        return self.classes[key]

    def serializer(self, fields, conf):
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

        message_class = self.message_class(fields)
        serialize = ProtobufSerializer(message_class, CLIENT, {"use.deprecated.format": False, **conf})
        return lambda record, ctx: serialize(message_class(**record), ctx)

    def deserializer(self, fields):
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

        return ProtobufDeserializer(self.message_class(fields), {"use.deprecated.format": False})

    @staticmethod
    def record(fields, version, index):
        return {name: value(name, version, index) for name, _, _ in fields}

    @staticmethod
    def expected(reader, written):
        zero = {"string": "", "int64": 0, "int32": 0, "double": 0.0}
        return {name: written.get(name, zero[kind]) for name, _, kind in reader}

    @staticmethod
    def decoded(reader, message):
        return {name: getattr(message, name) for name, _, _ in reader}

    fails_for_unpromised_readers = False
    reading = "shared fields kept, missing ones read as zero"


PROTO_ID, PROTO_EVENT, PROTO_MEMBER, PROTO_GUESTS = ("rsvp_id", 1, "int64"), ("event_id", 2, "string"), \
    ("member_id", 3, "int64"), ("guests", 4, "int32")
PROTO_NOTE, PROTO_VENUE = ("note", 5, "string"), ("venue", 6, "string")

# --- The scenarios --------------------------------------------------------------------------------
# Per format and mode: v1, a v2 compatible under the mode, an incompatible v3, the incompatibility
# kinds `apply` must report for v3 (one entry per incompatibility), and a v3 record.

AVRO_V1 = Avro.schema([AVRO_ID, AVRO_EVENT, AVRO_MEMBER, AVRO_GUESTS])  # examples/evolution/11-rsvp-v1.yaml
JSON_REQUIRED = ["rsvp_id", "event_id", "member_id"]
JSON_V1 = json_schema(json_fields("rsvp_id", "event_id", "member_id", "guests"), JSON_REQUIRED)
PROTO_V1 = [PROTO_ID, PROTO_EVENT, PROTO_MEMBER, PROTO_GUESTS]
# For JSON under FULL: a partially open content model (any further property must be a string),
# so a string property can come and go in both directions.
JSON_OPEN_V1 = json_schema(json_fields("rsvp_id", "event_id", "member_id"), JSON_REQUIRED,
                           additional={"type": "string"})

SCENARIOS = {
    "avro": (Avro, [
        # The seed story: removing `member_id` (no default) is accepted under BACKWARD; new readers
        # read everything, but a consumer still on v1 cannot read the new records.
        ("BACKWARD", AVRO_V1, Avro.schema([AVRO_ID, AVRO_EVENT, AVRO_GUESTS, AVRO_NOTE]),
         Avro.schema([AVRO_ID, AVRO_EVENT, avro_field("guests", "string", default="none"), AVRO_NOTE, AVRO_VENUE]),
         ["READER_FIELD_MISSING_DEFAULT_VALUE", "TYPE_MISMATCH"],
         {"rsvp_id": 3000, "event_id": "e", "guests": "two", "note": "n", "venue": "v"}),
        # The same removal under FORWARD (v3 here) is refused, and so is its auto-registration.
        ("FORWARD", AVRO_V1, Avro.schema([AVRO_ID, AVRO_EVENT, AVRO_MEMBER, AVRO_VENUE]),
         Avro.schema([AVRO_ID, AVRO_EVENT, AVRO_VENUE]),
         ["READER_FIELD_MISSING_DEFAULT_VALUE"],
         {"rsvp_id": 3000, "event_id": "e", "venue": "v"}),
        ("FULL", AVRO_V1, Avro.schema([AVRO_ID, AVRO_EVENT, AVRO_MEMBER, AVRO_NOTE]),
         Avro.schema([AVRO_ID, AVRO_EVENT, AVRO_NOTE, AVRO_VENUE]),
         ["READER_FIELD_MISSING_DEFAULT_VALUE", "READER_FIELD_MISSING_DEFAULT_VALUE"],
         {"rsvp_id": 3000, "event_id": "e", "note": "n", "venue": "v"}),
    ]),
    "json": (Json, [
        # Closed content model: an optional property added is readable by new readers only.
        ("BACKWARD", JSON_V1,
         json_schema(json_fields("rsvp_id", "event_id", "member_id", "guests", "note"), JSON_REQUIRED),
         json_schema(json_fields("rsvp_id", "member_id", "guests", "note", event_id="integer"),
                     JSON_REQUIRED + ["note"]),
         ["TYPE_CHANGED", "REQUIRED_ATTRIBUTE_ADDED"],
         {"rsvp_id": 3000, "event_id": 7, "member_id": 1, "note": "n"}),
        # Closed content model: an optional property removed is readable by old readers only.
        ("FORWARD", JSON_V1,
         json_schema(json_fields("rsvp_id", "event_id", "member_id"), JSON_REQUIRED),
         json_schema(json_fields("rsvp_id", "event_id"), ["rsvp_id", "event_id"]),
         # FORWARD diffs from the new schema to the old one: `member_id` is a required property
         # the old (closed) schema adds.
         ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"],
         {"rsvp_id": 3000, "event_id": "e"}),
        ("FULL", JSON_OPEN_V1,
         json_schema(json_fields("rsvp_id", "event_id", "member_id", "note"), JSON_REQUIRED,
                     additional={"type": "string"}),
         json_schema(json_fields("rsvp_id", "event_id", "member_id", "note", venue="integer"), JSON_REQUIRED,
                     additional={"type": "string"}),
         # Both directions: `venue` (integer) against the string-only additional properties.
         ["PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
          "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "TYPE_CHANGED", "TYPE_CHANGED"],
         {"rsvp_id": 3000, "event_id": "e", "member_id": 1, "note": "n", "venue": 4}),
    ]),
    "protobuf": (Protobuf, [
        ("BACKWARD", PROTO_V1, [PROTO_ID, PROTO_EVENT, PROTO_GUESTS, PROTO_NOTE],
         [("rsvp_id", 1, "string"), PROTO_EVENT, PROTO_GUESTS, PROTO_NOTE],
         ["FIELD_SCALAR_KIND_CHANGED"],
         {"rsvp_id": "three", "event_id": "e"}),
        ("FORWARD", PROTO_V1, [PROTO_ID, PROTO_EVENT, PROTO_MEMBER, PROTO_VENUE],
         [PROTO_ID, PROTO_EVENT, ("member_id", 3, "double"), PROTO_VENUE],
         ["FIELD_SCALAR_KIND_CHANGED"],
         {"rsvp_id": 3000, "member_id": 1.5}),
        ("FULL", PROTO_V1, [PROTO_ID, PROTO_EVENT, PROTO_MEMBER, PROTO_NOTE],
         [PROTO_ID, ("event_id", 2, "int64"), PROTO_MEMBER, PROTO_NOTE],
         ["FIELD_SCALAR_KIND_CHANGED"],  # once, with both directions (issue 36 item 6)
         {"rsvp_id": 3000, "event_id": 9}),
    ]),
}

# Which readers a mode promises can read every record of the topic.
PROMISED = {"BACKWARD": [2], "FORWARD": [1], "FULL": [1, 2]}


# --- Steps ----------------------------------------------------------------------------------------

def check(name, function, *args):
    """Runs one step; returns its result, or raises Skip after reporting a failure."""
    try:
        result = function(*args)
    except Exception:  # noqa: BLE001 - every failure is reported, then counted
        RESULTS["failed"] += 1
        print(f"FAIL {name}", flush=True)
        traceback.print_exc(file=sys.stdout)
        raise Skip from None
    RESULTS["passed"] += 1
    print(f"ok   {name}", flush=True)
    return result


def manifest(kind, name, spec):
    lines = ["apiVersion: schemaops.dev/v1alpha1", f"kind: {kind}", "metadata:", f"  name: {name}", "spec:"]
    for key, text in spec.items():
        if "\n" in text:
            lines.append(f"  {key}: |")
            lines.extend(f"    {line}" for line in text.rstrip("\n").split("\n"))
        else:
            lines.append(f"  {key}: {text}")
    return "\n".join(lines) + "\n"


def apply(folder, *files):
    """`schemaops apply --registry-url` on the scenario's data folder: (exit code, objects by kind)."""
    run = subprocess.run([SCHEMAOPS, "apply", "--data", os.path.join(folder, "data"), "--registry-url", URL,
                          "-o", "json", *[os.path.join(folder, f) for f in files]],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.stdout, f"apply printed nothing (exit {run.returncode}): {run.stderr}"
    return run.returncode, {item["kind"]: item for item in json.loads(run.stdout)["items"]}


def ready(item):
    return next(c for c in item["status"]["conditions"] if c["type"] == "Ready")


def produce(producer, topic, serializer, records):
    failures = []
    ctx = SerializationContext(topic, MessageField.VALUE)
    for record in records:
        payload = serializer(record, ctx) if serializer else record
        producer.produce(topic, value=payload, on_delivery=lambda error, _: error and failures.append(error))
    assert producer.flush(15) == 0, "every record is delivered"
    assert not failures, failures


def read_topic(topic):
    """Every record from offset 0 up to the end of the partition, raw. `assign` rather than a group
    subscription: Tansu's first group assignment takes seconds."""
    consumer = Consumer({"bootstrap.servers": BROKER, "group.id": f"{topic}-reader", "enable.auto.commit": False,
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
            assert message.offset() == len(values), f"offset {message.offset()} after {len(values)} records"
            values.append(message.value())
    finally:
        consumer.close()


def schema_id(payload):
    assert payload[0] == 0, "Confluent wire format: magic byte 0"
    return int.from_bytes(payload[1:5], "big")


def scenario(fmt, producer, mode, v1, v2, v3, v3_kinds, v3_record):
    topic = f"rsvp-{FORMAT}-{mode.lower()}"
    subject = f"{topic}-value"
    folder = os.path.join(WORKDIR, topic)
    os.makedirs(folder)
    name = f"{FORMAT}/{mode}"
    with open(os.path.join(folder, "config.yaml"), "w") as file:
        file.write(manifest("SubjectConfig", topic, {"subject": subject, "compatibility": mode}))
    for version, schema in ((1, v1), (2, v2), (3, v3)):
        with open(os.path.join(folder, f"v{version}.yaml"), "w") as file:
            file.write(manifest("Schema", topic, {"subject": subject, "schemaType": fmt.schema_type,
                                                  "schema": fmt.text(schema)}))
    records = {version: [fmt.record(schema, version, i) for i in range(RECORDS)] for version, schema in
               ((1, v1), (2, v2))}
    schemas = {1: v1, 2: v2}

    def apply_v1():
        code, objects = apply(folder, "config.yaml", "v1.yaml")
        assert code == 0, objects
        assert objects["Schema"]["status"]["version"] == 1, objects["Schema"]["status"]
        assert CLIENT.get_versions(subject) == [1]
        assert CLIENT.get_compatibility(subject) == mode
        return objects["Schema"]["status"]["id"]

    first_id = check(f"{name}: apply SubjectConfig ({mode}) + Schema v1 -> exit 0, version 1", apply_v1)
    admin = AdminClient({"bootstrap.servers": BROKER})
    for future in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
        future.result(15)

    check(f"{name}: produce {RECORDS} v1 records (serializer looks the schema up, no auto-registration)",
          produce, producer, topic, fmt.serializer(v1, LOOKUP_ONLY), records[1])

    def apply_v2():
        code, objects = apply(folder, "v2.yaml")
        status = objects["Schema"]["status"]
        assert code == 0, status
        assert objects["Schema"]["metadata"]["generation"] == 2, "an edit of the same Schema object"
        assert status["version"] == 2, status
        assert CLIENT.get_versions(subject) == [1, 2]
        return status["id"]

    second_id = check(f"{name}: apply v2 (compatible under {mode}) -> exit 0, version 2", apply_v2)
    check(f"{name}: produce {RECORDS} v2 records", produce, producer, topic, fmt.serializer(v2, LOOKUP_ONLY),
          records[2])

    def read_all():
        payloads = read_topic(topic)
        assert [schema_id(p) for p in payloads] == [first_id] * RECORDS + [second_id] * RECORDS, \
            [schema_id(p) for p in payloads]
        return payloads

    payloads = check(f"{name}: the topic holds {RECORDS} v1 then {RECORDS} v2 records (schema IDs "
                     f"{first_id}, {second_id})", read_all)
    written = records[1] + records[2]
    writers = [1] * RECORDS + [2] * RECORDS
    ctx = SerializationContext(topic, MessageField.VALUE)

    for reader in (1, 2):
        deserialize = fmt.deserializer(schemas[reader])

        def decode_all():
            for payload, record, writer in zip(payloads, written, writers):
                got = fmt.decoded(schemas[reader], deserialize(payload, ctx))
                assert got == fmt.expected(schemas[reader], record), (writer, got, record)

        def decode_own_and_fail_on_other():
            failures = []
            for payload, record, writer in zip(payloads, written, writers):
                if writer == reader:
                    got = fmt.decoded(schemas[reader], deserialize(payload, ctx))
                    assert got == fmt.expected(schemas[reader], record), (got, record)
                    continue
                try:
                    got = deserialize(payload, ctx)
                except Exception as error:  # noqa: BLE001 - the deserializer's error is the break shown
                    failures.append(error)
                else:
                    raise AssertionError(f"the v{reader} reader decoded a v{writer} record: {got}")
            assert len(failures) == RECORDS
            return failures[0]

        if reader in PROMISED[mode] or not fmt.fails_for_unpromised_readers:
            promised = "promised" if reader in PROMISED[mode] else "not promised, yet nothing fails"
            check(f"{name}: a v{reader} reader decodes all {2 * RECORDS} records field by field "
                  f"({fmt.reading}; {promised})", decode_all)
            if reader not in PROMISED[mode]:
                other = 3 - reader
                lost = [field for field in fmt.record(schemas[reader], reader, 0) if field not in records[other][0]]
                print(f"     (the v{other} records lack {', '.join(lost)}: "
                      f"the v{reader} reader sees their zero values, not an error)")
        else:
            error = check(f"{name}: a v{reader} reader, which {mode} does not promise, reads its own records "
                          f"and fails on every v{3 - reader} record", decode_own_and_fail_on_other)
            print(f"     ({type(error).__name__}: {str(error).splitlines()[0][:160]})")

    def apply_v3():
        code, objects = apply(folder, "v3.yaml")
        status = objects["Schema"]["status"]
        assert code == 1, status
        condition = ready(objects["Schema"])
        assert (condition["status"], condition["reason"]) == ("False", "IncompatibleSchema"), condition
        kinds = sorted(i["kind"] for i in status["compatibility"]["incompatibilities"])
        assert kinds == sorted(v3_kinds), kinds
        for kind in v3_kinds:
            assert kind in condition["message"], condition["message"]
        assert status["version"] == 2, "still version 2"
        assert CLIENT.get_versions(subject) == [1, 2]
        return ", ".join(kinds)

    kinds = check(f"{name}: apply incompatible v3 -> exit 1, the status names every incompatibility", apply_v3)
    print(f"     ({kinds})")

    def auto_register_v3():
        serialize = fmt.serializer(v3, AUTO_REGISTER)
        try:
            serialize(v3_record, ctx)
        except SchemaRegistryError as error:
            assert error.http_status_code == 409, f"HTTP {error.http_status_code}: {error}"
            assert any(kind in str(error) for kind in v3_kinds), str(error)
        else:
            raise AssertionError("the v3 record was serialized")
        assert CLIENT.get_versions(subject) == [1, 2]
        produce(producer, topic, None, [SENTINEL])

    check(f"{name}: a producer auto-registering v3 gets HTTP 409", auto_register_v3)

    def nothing_from_v3():
        payloads = read_topic(topic)
        assert payloads[-1] == SENTINEL, "the read reached the record written after the refusal"
        ids = [schema_id(p) for p in payloads[:-1]]
        assert ids == [first_id] * RECORDS + [second_id] * RECORDS, ids

    check(f"{name}: the topic still holds only the {2 * RECORDS} v1 and v2 records", nothing_from_v3)


def main():
    fmt_class, scenarios = SCENARIOS[FORMAT]
    fmt = fmt_class()
    producer = Producer({"bootstrap.servers": BROKER, "linger.ms": 5})
    for mode, v1, v2, v3, v3_kinds, v3_record in scenarios:
        try:
            scenario(fmt, producer, mode, v1, v2, v3, v3_kinds, v3_record)
        except Skip:
            print(f"     ({FORMAT}/{mode}: the remaining steps were skipped)")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)


main()
