// Package schemaagree holds no code: its test runs the same schemas and
// payloads through the three readers of Pub/Sub schemas (the decoder, the
// sink's encoder and the embedded emulator's validation) and checks they
// agree on which schemas are valid and which payloads are instances of
// them. They share avroschema and protoschema; the test keeps it so.
package schemaagree
