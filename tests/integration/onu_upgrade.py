"""The ONU software upgrade over OMCI as VOLTHA's openonu adapter runs it (voltha-openonu-adapter-go,
internal/pkg/swupg/omci_onu_upgrade.go and common/omci_cc.go), for tests, over any transport.

What the adapter does, and so this driver:

- Start Software Download on the inactive SoftwareImage instance with the window size *limit* (sections per
  window - 1: 31 baseline, 7 extended), the unpadded image size and one circuit pack; it adopts the window size
  the ONU answers.
- Download Section frames, section number counting 0..limit inside each window; the last section of a window and
  the last section of the image are sent with AR (message type 0x54) and answered with that section number.
  Baseline sections carry 31 octets, the last one zero-padded; extended sections 1965, the last one shorter.
- End Software Download with the CRC-32/BZIP2 of the unpadded image (crc32a's value byte-swapped, then written
  big-endian: the plain CRC-32/BZIP2 in network order) and the unpadded size.
- Get SoftwareImage (version, is_committed, is_active) of that instance: inactive, uncommitted, the new version.
- Activate Software (flags 0): the ONU answers, then reboots into the image.
- After the reboot, Commit Software on the now active instance, and a Get that must show it active and committed.

`send(frame)` hands one OMCI frame to the ONU; `receive(tid)` returns the ONU's response with that transaction id
(raising when none comes). Every step checks the response and raises AssertionError saying what was wrong.
"""
from __future__ import annotations

import binascii
from typing import Callable

from oltsim.omci import codec

SOFTWARE_IMAGE = codec.SOFTWARE_IMAGE
SECTION_SIZE = {False: 31, True: 1965}
WINDOW_SIZE_LIMIT = {False: 31, True: 7}
# Get mask: version (attribute 1), is_committed (2), is_active (3).
IMAGE_ATTRIBUTES_MASK = 0xE000
VERSION_OCTETS = 14

_REVERSE_OCTET = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))


def crc32_bzip2(data: bytes) -> int:
    """CRC-32/BZIP2 (ITU I.363.5, what crc32a computes before its byte swap), written independently of the
    simulator's own: zlib's reflected CRC-32 over bit-reversed octets, the result bit-reversed."""
    reflected = binascii.crc32(bytes(data).translate(_REVERSE_OCTET))
    return int(f"{reflected:032b}"[::-1], 2)


class OnuUpgrade:
    """One ONU's upgrade, driven like the openonu adapter. `extended` picks the OMCI message set."""

    def __init__(self, send: Callable[[bytes], None], receive: Callable[[int], bytes], extended: bool = False,
                 first_tid: int = 0x1000):
        self.send = send
        self.receive = receive
        self.extended = extended
        self.tid = first_tid
        self.sections_sent = 0
        self.windows = 0

    def _next_tid(self) -> int:
        self.tid = self.tid % 0xFFFF + 1
        return self.tid

    def _frame(self, message_type: int, me_id: int, contents: bytes) -> tuple[int, bytes]:
        tid = self._next_tid()
        return tid, codec.encode(tid, message_type, SOFTWARE_IMAGE, me_id, contents, self.extended)

    def _request(self, message_type: int, me_id: int, contents: bytes, what: str) -> codec.Frame:
        tid, frame = self._frame(message_type | codec.AR, me_id, contents)
        self.send(frame)
        response = codec.parse(self.receive(tid))
        assert response.action == message_type and response.ak, f"{what}: answered {response}"
        assert (response.me_class, response.me_id) == (SOFTWARE_IMAGE, me_id), f"{what}: answered {response}"
        return response

    # ---- the steps ------------------------------------------------------------------------------------------

    def download(self, image: bytes, instance: int = 1) -> None:
        """Start, every window of sections, End: the ONU must accept each step and the image's CRC."""
        section_size = SECTION_SIZE[self.extended]
        limit = WINDOW_SIZE_LIMIT[self.extended]
        size = len(image)
        start = self._request(codec.START_SW_DOWNLOAD, instance,
                              bytes([limit]) + size.to_bytes(4, "big") + b"\x01\x00\x00", "Start Software Download")
        assert start.contents[0] == codec.SUCCESS, f"Start Software Download refused: result {start.contents[0]}"
        limit = start.contents[1]                       # the ONU's window size (limit) wins
        count = -(-size // section_size)
        in_window = 0
        for number in range(count):
            data = image[number * section_size:(number + 1) * section_size]
            if not self.extended:
                data = data.ljust(section_size, b"\x00")
            last = number == count - 1
            ack = in_window == limit or last
            message_type = codec.DOWNLOAD_SECTION | (codec.AR if ack else 0)
            tid, frame = self._frame(message_type, instance, bytes([in_window]) + data)
            self.send(frame)
            self.sections_sent += 1
            if ack:
                answer = codec.parse(self.receive(tid))
                assert answer.action == codec.DOWNLOAD_SECTION and answer.ak, f"window {self.windows}: {answer}"
                assert answer.contents[0] == codec.SUCCESS, \
                    f"window {self.windows}: Download Section result {answer.contents[0]}"
                assert answer.contents[1] == in_window, \
                    f"window {self.windows}: acknowledged section {answer.contents[1]}, sent {in_window}"
                self.windows += 1
                in_window = 0
            else:
                in_window += 1
        end = self._request(codec.END_SW_DOWNLOAD, instance,
                            crc32_bzip2(image).to_bytes(4, "big") + size.to_bytes(4, "big") + b"\x01\x00\x00",
                            "End Software Download")
        assert end.contents[0] == codec.SUCCESS, f"End Software Download refused: result {end.contents[0]}"

    def get_image(self, instance: int) -> tuple[str, int, int]:
        """(version, is_committed, is_active) of a SoftwareImage instance."""
        response = self._request(codec.GET, instance, IMAGE_ATTRIBUTES_MASK.to_bytes(2, "big"), "Get SoftwareImage")
        contents = response.contents
        assert contents[0] == codec.SUCCESS, f"Get SoftwareImage {instance}: result {contents[0]}"
        at = 7 if self.extended else 3              # extended: the two failure masks come before the values
        version = contents[at:at + VERSION_OCTETS].rstrip(b"\x00").decode("latin-1")
        return version, contents[at + VERSION_OCTETS], contents[at + VERSION_OCTETS + 1]

    def activate(self, instance: int) -> None:
        """Activate Software (flags 0, unconditional): the ONU answers success, then reboots."""
        response = self._request(codec.ACTIVATE_SW, instance, b"\x00", "Activate Software")
        assert response.contents[0] == codec.SUCCESS, f"Activate Software refused: result {response.contents[0]}"

    def commit(self, instance: int) -> None:
        """Commit Software on the active instance."""
        response = self._request(codec.COMMIT_SW, instance, b"", "Commit Software")
        assert response.contents[0] == codec.SUCCESS, f"Commit Software refused: result {response.contents[0]}"
