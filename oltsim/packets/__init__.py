"""Subscriber packet protocols: frame codecs (EAPOL, DHCP, IGMP) and the per-service machines
that `oltsim.packets.engine.ProtocolEngine` drives for every ONU."""
