"""Generate oltsim's ONU software image, oltsim/data/configs/software-image.img (served as GET /images/<file>).

Run as ``python tools/gen_software_image.py [--check]``: the bytes are deterministic (a fixed seed), so the
committed file is exactly what this writes; ``--check`` exits 1 when the committed copy differs.

The image is not firmware. Its first 14 octets are the version the simulated ONU reports after the download
(`BBSM_IMG_00002`, the version VOLTHA's ONU upgrade tests request from a simulated ONU), then a text header
naming oltsim, then pseudo-random filler. 32768 octets: 1058 baseline OMCI sections of 31 octets, the last one
carrying a single octet, so a download exercises the padding of the last section and a short last window.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

VERSION = b"BBSM_IMG_00002"     # 14 octets: the SoftwareImage version attribute
SIZE = 32768
SEED = 20260821
HEADER = (b"# oltsim simulated ONU software image. Not firmware: a version, this header and "
          b"pseudo-random filler (tools/gen_software_image.py, seed %d).\n" % SEED)
TARGET = Path(__file__).resolve().parent.parent / "oltsim" / "data" / "configs" / "software-image.img"


def image() -> bytes:
    """The image's bytes."""
    head = VERSION + HEADER
    filler = random.Random(SEED).randbytes(SIZE - len(head))
    return head + filler


def main(argv: list[str]) -> int:
    data = image()
    if "--check" in argv:
        same = TARGET.exists() and TARGET.read_bytes() == data
        print(f"{TARGET.name}: {'up to date' if same else 'differs from tools/gen_software_image.py'}")
        return 0 if same else 1
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_bytes(data)
    print(f"wrote {TARGET.name} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
