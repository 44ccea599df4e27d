"""oltsim: one process simulates one OLT, its NNI and PON ports, ONUs, UNIs and services."""
__version__ = "0.1.0"
