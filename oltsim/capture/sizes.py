"""How many records the capture ring keeps: its default and its bounds, apart from the ring so that the settings
(the capture_size row of oltsim.config) read them without importing the ring."""

#: The records the ring keeps by default (--capture-size, bbsim.capture_size; 0 turns capture off); the daemon's ring
#: (`Capture.for_olt`) keeps the size given or the ONUs' bring-ups (`onu_floor`), whichever is larger.
DEFAULT_SIZE = 20_000
#: The most records the floor asks for: every ONU's bring-up up to about 16x32 with 4 UNIs (378,880), and a bound on
#: what a larger OLT spends unasked (about 100 MiB after a bring-up, 157 MiB at most): a 16x256 OLT's ring would
#: otherwise take about 480 MiB. Beyond it the ring wraps, and says so (Coverage); --capture-size raises it.
FLOOR_MAX = 500_000
#: The largest size --capture-size accepts.
MAX_SIZE = 10_000_000
