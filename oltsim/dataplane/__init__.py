"""The data plane: real Ethernet frames between bound UNIs and the NNI, tagged as the ONU's OMCI VLAN
configuration and the OLT's flows say. `pipeline.DataPlane` is the pure part (no sockets, no reactor); the TAP
interfaces, namespaces and the service that wires them live beside it."""
