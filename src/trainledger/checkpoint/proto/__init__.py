"""Our copy of MindSpore's checkpoint schema (``mindspore_checkpoint.proto``) and its generated
code, committed so users need only the protobuf runtime (``python -m tools.regen_protos``)."""
