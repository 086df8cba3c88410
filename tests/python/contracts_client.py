"""Data contracts through the official Confluent Python client (issue 19).

Registers schemas with metadata and rule sets and reads them back, sets a
compatibility group, finds versions with `get_latest_with_metadata` (what
`use.latest.with.metadata` serializers call), and round-trips a record
whose schema travels as a GUID in a header (`header_schema_id_serializer`)
rather than as a 4-byte ID in the payload.

Usage: contracts_client.py REGISTRY_URL
"""

import json
import sys
import uuid

from confluent_kafka.schema_registry import (
    Metadata,
    MetadataProperties,
    MetadataTags,
    Rule,
    RuleKind,
    RuleMode,
    RuleSet,
    Schema,
    SchemaRegistryClient,
    SchemaRegistryError,
    ServerConfig,
    header_schema_id_serializer,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

GROUP = "application.major_version"


def record(name, fields):
    return json.dumps({"type": "record", "name": name, "namespace": "dev.schemaops.contracts", "fields": fields})


def main(url):
    client = SchemaRegistryClient({"url": url})

    # Metadata and a rule set, registered and read back as sent.
    customer = record("Customer", [{"name": "id", "type": "string"}, {"name": "ssn", "type": "string"},
                                   {"name": "age", "type": "int"}])
    metadata = Metadata(
        tags=MetadataTags({"Customer.ssn": ["PII"]}),
        properties=MetadataProperties({"owner": "team-a", GROUP: "1"}),
        sensitive=["ssn"],
    )
    rules = RuleSet(
        migration_rules=[],
        domain_rules=[Rule(name="ageIsPositive", doc="no negative ages", kind=RuleKind.CONDITION,
                           mode=RuleMode.WRITE, type="CEL", tags=None, params=None,
                           expr="message.age >= 0", on_success=None, on_failure="ERROR", disabled=False)],
    )
    registered = client.register_schema_full_response(
        "customers-value", Schema(customer, "AVRO", metadata=metadata, rule_set=rules))
    assert registered.guid is not None, "a registration answers the schema's GUID"
    latest = client.get_latest_version("customers-value")
    assert latest.guid == registered.guid, (latest.guid, registered.guid)
    assert latest.schema.metadata.properties.properties["owner"] == "team-a"
    assert latest.schema.metadata.tags.tags["Customer.ssn"] == ["PII"]
    assert latest.schema.metadata.sensitive == ["ssn"]
    rule = latest.schema.rule_set.domain_rules[0]
    assert (rule.name, rule.kind, rule.mode, rule.type, rule.expr) == (
        "ageIsPositive", RuleKind.CONDITION, RuleMode.WRITE, "CEL", "message.age >= 0"), rule
    by_guid = client.get_schema_by_guid(registered.guid)
    assert json.loads(by_guid.schema_str) == json.loads(customer)
    print("metadata and rule set: registered and read back, also by GUID", registered.guid)

    # A metadata-only change is a new version with a new ID.
    changed = Metadata(tags=MetadataTags({"Customer.ssn": ["PII"]}),
                       properties=MetadataProperties({"owner": "team-b", GROUP: "1"}), sensitive=["ssn"])
    second = client.register_schema_full_response(
        "customers-value", Schema(customer, "AVRO", metadata=changed, rule_set=rules))
    assert second.schema_id != registered.schema_id and second.guid != registered.guid
    assert client.get_versions("customers-value") == [1, 2]
    print("a metadata-only change: version 2, ID", second.schema_id)

    # An invalid rule set is refused with 42210.
    try:
        bad = RuleSet(migration_rules=[Rule(name="up", doc=None, kind=RuleKind.TRANSFORM, mode=RuleMode.WRITE,
                                            type="JSONATA", tags=None, params=None, expr="$", on_success=None,
                                            on_failure=None, disabled=False)], domain_rules=[])
        client.register_schema("customers-value", Schema(customer, "AVRO", rule_set=bad))
        raise AssertionError("an invalid rule set was accepted")
    except SchemaRegistryError as error:
        assert error.error_code == 42210, error
    print("an invalid rule set: 42210")

    # A compatibility group: major version 3 breaks version 2 as a new lineage.
    client.set_config("orders-value", ServerConfig(compatibility_group=GROUP))
    assert client.get_config("orders-value").compatibility_group == GROUP
    v2 = record("Order", [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"}])
    v3 = record("Order", [{"name": "id", "type": "string"}, {"name": "amount", "type": "string"}])
    major = lambda n: Metadata(tags=None, properties=MetadataProperties({GROUP: n}), sensitive=None)  # noqa: E731
    client.register_schema("orders-value", Schema(v2, "AVRO", metadata=major("2")))
    try:
        client.register_schema("orders-value", Schema(v3, "AVRO", metadata=major("2")))
        raise AssertionError("a breaking change inside lineage 2 was accepted")
    except SchemaRegistryError as error:
        assert error.http_status_code == 409, error
    client.register_schema("orders-value", Schema(v3, "AVRO", metadata=major("3")))
    found = client.get_latest_with_metadata("orders-value", {GROUP: "2"})
    assert found.version == 1, found.version
    found = client.get_latest_with_metadata("orders-value", {GROUP: "3"})
    assert found.version == 2, found.version
    print("compatibility group: lineage 3 accepted beside lineage 2; latest with metadata found each")

    # The GUID in a header: the serializer picks lineage 3 by its metadata,
    # writes no prefix, and the deserializer finds the schema by GUID.
    serializer = AvroSerializer(client, v3, conf={
        "auto.register.schemas": False,
        "use.latest.with.metadata": {GROUP: "3"},
        "schema.id.serializer": header_schema_id_serializer,
    })
    headers = []
    value = {"id": "o-1", "amount": "12.50 EUR"}
    payload = serializer(value, SerializationContext("orders", MessageField.VALUE, headers))
    assert len(headers) == 1 and headers[0][0] == "__value_schema_id", headers
    header = headers[0][1]
    assert header[0] == 1 and len(header) == 17, header
    assert str(uuid.UUID(bytes=header[1:])) == found.guid, (header, found.guid)
    # The payload is the record's Avro body from its first byte (the string
    # "o-1": length 3 zigzag-encoded as 6, then its bytes): no magic byte, no ID.
    assert payload[0] == 6 and payload[1:4] == b"o-1", payload
    deserializer = AvroDeserializer(client)
    read = deserializer(payload, SerializationContext("orders", MessageField.VALUE, headers))
    assert read == value, read
    print("header GUID round trip:", found.guid)


if __name__ == "__main__":
    main(sys.argv[1])
