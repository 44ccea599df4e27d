"""How a connection is accepted, bounded and served, on every listener of oltsim.

- :mod:`~oltsim.serving.endpoints`: Twisted endpoint strings translated for the gRPC engines, and bind errors.
- :mod:`~oltsim.serving.grpcserver`: a gRPC server as a Twisted service (either engine), restartable at runtime.
- :mod:`~oltsim.serving.nativeserver`: the default engine, pygrpc-native's front answered on the reactor's loop.
- :mod:`~oltsim.serving.onloop`: servicers adapted to the loop, shared by both engines; bounded stream queues.
- :mod:`~oltsim.serving.tlsfront`: the TLS relay in front of the native engine on ``ssl:`` endpoints.
- :mod:`~oltsim.serving.connlimit`: the connections a Twisted listener (REST, SADIS, the TLS relay) holds.
- :mod:`~oltsim.serving.security`: the access token, TLS options, listeners built from endpoint strings.
"""
