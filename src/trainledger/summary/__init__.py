"""TensorBoard-format summaries: framing, protobuf schema, pure encoders, writer, reader."""
