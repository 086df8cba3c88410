"""The official Confluent Python client against `schemaops registry`.

Usage: registry_client.py URL [FORMAT ...]   (FORMAT: avro, json, protobuf; default all)
Prints one line per check and `N passed, N failed` at the end; exits 1 on any failure.
"""

import json
import sys
import traceback

from confluent_kafka.schema_registry import ConfigCompatibilityLevel, Schema, SchemaRegistryClient, ServerConfig
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

URL = sys.argv[1]
FORMATS = sys.argv[2:] or ["avro", "json", "protobuf"]
CLIENT = SchemaRegistryClient({"url": URL})
RESULTS = {"passed": 0, "failed": 0}


def check(name, function):
    try:
        function()
    except Exception:  # noqa: BLE001 - every failure is reported, then counted
        RESULTS["failed"] += 1
        print(f"FAIL {name}")
        traceback.print_exc()
    else:
        RESULTS["passed"] += 1
        print(f"ok   {name}")


def expect_error(status, function):
    try:
        function()
    except SchemaRegistryError as error:
        assert error.http_status_code == status, f"expected HTTP {status}, got {error.http_status_code}: {error}"
        return error
    raise AssertionError(f"expected HTTP {status}, the call succeeded")


def context(topic):
    return SerializationContext(topic, MessageField.VALUE)


# --- The registry API through the client -------------------------------------------------------

USER_V1 = json.dumps({"type": "record", "name": "User", "namespace": "example",
                      "fields": [{"name": "name", "type": "string"}]})
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "example",
                      "fields": [{"name": "name", "type": "string"},
                                 {"name": "age", "type": "int", "default": 0}]})
USER_BREAKING = json.dumps({"type": "record", "name": "User", "namespace": "example",
                            "fields": [{"name": "name", "type": "long"},
                                       {"name": "email", "type": "string"}]})


def registry_api():
    subject = "api-value"
    first = CLIENT.register_schema(subject, Schema(USER_V1, "AVRO"))
    assert CLIENT.register_schema(subject, Schema(USER_V1, "AVRO")) == first, "registering twice gives one ID"
    found = CLIENT.lookup_schema(subject, Schema(USER_V1, "AVRO"))
    assert found.schema_id == first and found.version == 1, found
    assert json.loads(CLIENT.get_schema(first).schema_str) == json.loads(USER_V1)
    second = CLIENT.register_schema(subject, Schema(USER_V2, "AVRO"))
    assert second != first
    assert CLIENT.get_versions(subject) == [1, 2]
    assert CLIENT.get_latest_version(subject).version == 2
    assert CLIENT.get_version(subject, 1).schema_id == first
    assert subject in CLIENT.get_subjects()
    # Issue 39: the client sends ?subject= and reads the answer's extra fields;
    # an error's `detail` leaves its message Confluent's exact text.
    assert json.loads(CLIENT.get_schema(first, subject_name=subject).schema_str) == json.loads(USER_V1)
    missing = expect_error(404, lambda: CLIENT.get_version(subject, 15))
    assert missing.error_code == 40402 and missing.error_message == "Version 15 not found.", str(missing)

    assert CLIENT.test_compatibility(subject, Schema(USER_V2, "AVRO")) is True
    assert CLIENT.test_compatibility(subject, Schema(USER_BREAKING, "AVRO")) is False
    assert CLIENT.test_compatibility(subject, Schema(USER_BREAKING, "AVRO"), version=1, verbose=True) is False

    error = expect_error(409, lambda: CLIENT.register_schema(subject, Schema(USER_BREAKING, "AVRO")))
    assert "TYPE_MISMATCH" in str(error) and "READER_FIELD_MISSING_DEFAULT_VALUE" in str(error), str(error)

    CLIENT.set_config(subject, ServerConfig(compatibility=ConfigCompatibilityLevel.FULL))
    assert CLIENT.get_config(subject).compatibility_level == ConfigCompatibilityLevel.FULL
    assert CLIENT.get_config().compatibility_level == ConfigCompatibilityLevel.BACKWARD

    assert CLIENT.delete_version(subject, 1) == 1
    assert CLIENT.get_versions(subject) == [2]
    assert CLIENT.delete_subject(subject) == [2]
    expect_error(404, lambda: CLIENT.get_versions(subject))
    assert CLIENT.delete_subject(subject, permanent=True) == [1, 2]


# --- Serializer round trips ----------------------------------------------------------------------

def avro_round_trip():
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    topic = "avro-users"
    serializer = AvroSerializer(CLIENT, USER_V1)
    payload = serializer({"name": "ada"}, context(topic))
    assert payload[0] == 0, "Confluent wire format starts with magic byte 0"
    deserializer = AvroDeserializer(CLIENT)
    assert deserializer(payload, context(topic)) == {"name": "ada"}
    newer = AvroSerializer(CLIENT, USER_V2)(({"name": "bob", "age": 3}), context(topic))
    assert deserializer(newer, context(topic)) == {"name": "bob", "age": 3}
    breaking = AvroSerializer(CLIENT, USER_BREAKING)
    expect_error(409, lambda: breaking({"name": 1, "email": "x"}, context(topic)))
    assert CLIENT.get_versions(f"{topic}-value") == [1, 2], "the refused schema was not registered"


def json_round_trip():
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

    topic = "json-users"
    v1 = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "User", "type": "object",
                     "properties": {"name": {"type": "string"}}, "required": ["name"],
                     "additionalProperties": False})
    v2 = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "User", "type": "object",
                     "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                     "required": ["name"], "additionalProperties": False})
    breaking = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "User", "type": "object",
                           "properties": {"name": {"type": "integer"}}, "required": ["name"],
                           "additionalProperties": False})
    payload = JSONSerializer(v1, CLIENT)({"name": "ada"}, context(topic))
    assert payload[0] == 0
    deserializer = JSONDeserializer(None, schema_registry_client=CLIENT)
    assert deserializer(payload, context(topic)) == {"name": "ada"}
    newer = JSONSerializer(v2, CLIENT)({"name": "bob", "age": 3}, context(topic))
    assert deserializer(newer, context(topic)) == {"name": "bob", "age": 3}
    expect_error(409, lambda: JSONSerializer(breaking, CLIENT)({"name": 5}, context(topic)))
    assert CLIENT.get_versions(f"{topic}-value") == [1, 2]


def protobuf_message(fields):
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    file = descriptor_pb2.FileDescriptorProto(name="example/user.proto", package="example", syntax="proto3")
    message = file.message_type.add(name="User")
    for number, (name, kind) in enumerate(fields, start=1):
        message.field.add(name=name, number=number, type=kind,
                          label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("example.User"))


def protobuf_round_trip():
    from google.protobuf import descriptor_pb2
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    string, int32 = descriptor_pb2.FieldDescriptorProto.TYPE_STRING, descriptor_pb2.FieldDescriptorProto.TYPE_INT32
    topic = "proto-users"
    config = {"use.deprecated.format": False}
    user_v1 = protobuf_message([("name", string)])
    user_v2 = protobuf_message([("name", string), ("age", int32)])
    user_breaking = protobuf_message([("name", int32)])
    payload = ProtobufSerializer(user_v1, CLIENT, config)(user_v1(name="ada"), context(topic))
    assert payload[0] == 0
    deserializer = ProtobufDeserializer(user_v2, config, schema_registry_client=CLIENT)
    assert deserializer(payload, context(topic)).name == "ada"
    newer = ProtobufSerializer(user_v2, CLIENT, config)(user_v2(name="bob", age=3), context(topic))
    decoded = deserializer(newer, context(topic))
    assert (decoded.name, decoded.age) == ("bob", 3)
    serialized = CLIENT.get_schema(CLIENT.get_latest_version(f"{topic}-value").schema_id, fmt="serialized")
    assert serialized.schema_type == "PROTOBUF" and serialized.schema_str, "format=serialized answers"
    breaking = ProtobufSerializer(user_breaking, CLIENT, config)
    expect_error(409, lambda: breaking(user_breaking(name=5), context(topic)))
    assert CLIENT.get_versions(f"{topic}-value") == [1, 2]


check("registry API: register, lookup, versions, config, compatibility, deletes", registry_api)
ROUND_TRIPS = {"avro": avro_round_trip, "json": json_round_trip, "protobuf": protobuf_round_trip}
for format_name in FORMATS:
    check(f"{format_name} serializer round trip and 409 on an incompatible auto-registration", ROUND_TRIPS[format_name])

print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
sys.exit(1 if RESULTS["failed"] else 0)
