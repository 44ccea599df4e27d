"""Generated protobuf and gRPC stubs: written by tools/genproto.py from proto/*.proto, never edited by hand."""
