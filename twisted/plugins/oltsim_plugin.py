"""twistd plugin: `twistd -n oltsim` runs one simulated OLT (wiring lives in oltsim.tap)."""
from twisted.application.service import ServiceMaker

oltsim = ServiceMaker(
    "oltsim",
    "oltsim.tap",
    "A simulated OpenOLT optical line terminal with BBSim-compatible control APIs.",
    "oltsim",
)
