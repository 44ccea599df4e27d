"""The Device Management Interface (DMI) server: VOLTHA's hardware, software, events and metrics management services
over the simulated OLT (``--dmi``, default tcp:50075)."""
