"""The source's options, parsed and checked on the driver: the connection and pacing
(source.py), decoding (decode_options.py, protobuf_options.py, schema_plan.py),
admission control and attribute columns."""
