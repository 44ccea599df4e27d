"""Legacy API v0 (deprecated): gRPC `legacy.BBSimService` and REST `/v0`, both over `V0Commands`.

`mapping.MAPPING` says how each v0 call maps to v1 (`mapping.markdown_table()` renders it for
docs/api.md); `commands` documents the filter and bulk semantics.
"""
