"""A capture record's layout: the capture points, and the fields of the plain tuple the ring keeps for each frame
and annotation (a tuple is cheap to build on the hot path)."""

# Capture points: the kinds of record.
OMCI, UNI, NNI, EVENT = range(4)
POINT_NAMES = ("omci", "uni", "nni", "event")

# A record: (time, point, up, serial, pon, onu_id, port, gem, data)
#   time    the reactor clock's seconds
#   up      True: from the ONU towards the adapter / out of the NNI towards the network (upstream)
#   serial  ONU serial ("" for the NNI and OLT-wide annotations); pon, onu_id -1 when none
#   port    UNI id (UNI), NNI id (NNI), -1 otherwise; gem the GEM port of a UNI frame (0 when unknown)
#   data    the frame's bytes; (bytes, original length) when cut to SNAPLEN; the model event for an annotation
TIME, POINT, UP, SERIAL, PON, ONU_ID, PORT, GEM, DATA = range(9)
