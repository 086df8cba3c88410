"""JSON Schema references across subjects through the official Confluent Python client (issue 39).

Usage: json_references_client.py URL
Registers `addr-json`, then a person schema whose `$ref`s name it by the reference's name; reads
both back; serializes and deserializes a record whose validation follows the reference; and checks
that a change inside the referenced schema counts in a compatibility check.
Prints one line per check and `N passed, N failed` at the end; exits 1 on any failure.
"""

import json
import sys
import traceback

from confluent_kafka.schema_registry import (ConfigCompatibilityLevel, Schema, SchemaReference, SchemaRegistryClient,
                                             ServerConfig)
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

URL = sys.argv[1]
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


ADDRESS_V1 = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Address", "type": "object",
                         "properties": {"city": {"type": "string"}}, "required": ["city"],
                         "definitions": {"zip": {"type": "string", "maxLength": 10}}})
ADDRESS_V2 = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Address", "type": "object",
                         "properties": {"city": {"type": "integer"}}, "required": ["city"],
                         "definitions": {"zip": {"type": "string", "maxLength": 10}}})
PERSON = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Person", "type": "object",
                     "properties": {"name": {"type": "string"}, "home": {"$ref": "addr.json"},
                                    "zips": {"type": "array", "items": {"$ref": "addr.json#/definitions/zip"}}},
                     "required": ["name", "home"]})
TOPIC = "people"
SUBJECT = f"{TOPIC}-value"


def person(version):
    return Schema(PERSON, "JSON", references=[SchemaReference("addr.json", "addr-json", version)])


def context():
    return SerializationContext(TOPIC, MessageField.VALUE)


def register_and_read():
    address_id = CLIENT.register_schema("addr-json", Schema(ADDRESS_V1, "JSON"))
    person_id = CLIENT.register_schema(SUBJECT, person(1))
    assert person_id != address_id
    stored = CLIENT.get_schema(person_id)
    assert stored.schema_type == "JSON" and json.loads(stored.schema_str) == json.loads(PERSON), stored
    [reference] = stored.references
    assert (reference.name, reference.subject, reference.version) == ("addr.json", "addr-json", 1), reference
    latest = CLIENT.get_latest_version(SUBJECT)
    assert latest.version == 1 and latest.schema_id == person_id, latest
    found = CLIENT.lookup_schema(SUBJECT, person(1))
    assert found.schema_id == person_id and found.version == 1, found


def serialize_with_the_reference():
    serializer = JSONSerializer(person(1), CLIENT, conf={"auto.register.schemas": False, "use.latest.version": True})
    record = {"name": "ada", "home": {"city": "London"}, "zips": ["N1 9GU"]}
    payload = serializer(record, context())
    assert payload[0] == 0, "Confluent wire format starts with magic byte 0"
    assert int.from_bytes(payload[1:5], "big") == CLIENT.get_latest_version(SUBJECT).schema_id
    deserializer = JSONDeserializer(None, schema_registry_client=CLIENT)
    assert deserializer(payload, context()) == record
    # Validation follows the reference: a city that is not a string breaks the referenced schema.
    try:
        serializer({"name": "bob", "home": {"city": 5}}, context())
    except SerializationError as error:
        assert "city" in str(error) or "string" in str(error), str(error)
    else:
        raise AssertionError("a record that breaks the referenced schema was serialized")


def a_change_inside_the_reference_counts():
    CLIENT.set_config("addr-json", ServerConfig(compatibility=ConfigCompatibilityLevel.NONE))
    CLIENT.register_schema("addr-json", Schema(ADDRESS_V2, "JSON"))
    assert CLIENT.test_compatibility(SUBJECT, person(1)) is True
    assert CLIENT.test_compatibility(SUBJECT, person(2)) is False, "city changed type inside the reference"


check("register and read a JSON Schema with a cross-subject reference", register_and_read)
check("serialize and deserialize a record through the reference", serialize_with_the_reference)
check("a change inside the referenced schema is judged by the compatibility check", a_change_inside_the_reference_counts)

print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
sys.exit(1 if RESULTS["failed"] else 0)
