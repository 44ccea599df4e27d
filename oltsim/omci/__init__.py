"""OMCI for the simulated ONUs: a small G.988 codec, the MIB BBSim reports, and the responder."""
