"""Reading a controller app archive: the `app.xml` at the root of an .oar (a zip), or a bare app.xml.

The update needs the archive's app name (to refuse uploading the wrong app) and version (what to wait for).
The controller remains the judge of the rest: an archive this module reads can still be refused by it.
"""
from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from xml.etree import ElementTree

from oltsim.platform.catalog import onos_version


class BadArchive(ValueError):
    """Not an app archive this tool can read: not a zip with app.xml at its root, nor an app.xml."""


@dataclass(frozen=True)
class AppArchive:
    """What app.xml says: the app name, its version in the controller's form, and the apps it requires."""

    name: str
    version: str
    required_apps: tuple[str, ...]


def read_app_xml(xml: bytes) -> AppArchive:
    """Parse app.xml: `<app name=... version=... apps="a,b">`."""
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError as exc:
        raise BadArchive(f"app.xml is not well-formed XML: {exc}") from None
    if root.tag.rsplit("}", 1)[-1] != "app":
        raise BadArchive(f"app.xml root element is <{root.tag}>, not <app>")
    name = root.get("name", "").strip()
    version = root.get("version", "").strip()
    if not name or not version:
        raise BadArchive("app.xml has no name or no version attribute")
    required = tuple(a.strip() for a in root.get("apps", "").split(",") if a.strip())
    return AppArchive(name, onos_version(version), required)


def read_archive(data: bytes) -> AppArchive:
    """Read an .oar (zip with app.xml at its root) or a bare app.xml."""
    if data[:2] == b"PK":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                try:
                    xml = z.read("app.xml")
                except KeyError:
                    raise BadArchive("the archive has no app.xml at its root") from None
        except zipfile.BadZipFile as exc:
            raise BadArchive(f"not a readable zip archive: {exc}") from None
        return read_app_xml(xml)
    if data.lstrip()[:1] == b"<":
        return read_app_xml(data)
    raise BadArchive("neither a zip archive (.oar) nor an app.xml")
