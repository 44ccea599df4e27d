"""oltsim-platform: the controller URL and credentials, the app archive reader, the rollback copy on disk."""
import io
import zipfile

import pytest

from oltsim.platform.appupdate import expected_version, write_backup
from oltsim.platform.archive import BadArchive, read_archive
from oltsim.platform.controller import parse_target, read_ca_bundle


@pytest.mark.parametrize("url, base, user, password", [
    ("http://karaf:karaf@127.0.0.1:8181", "http://127.0.0.1:8181/onos/v1", "karaf", "karaf"),
    ("karaf:karaf@127.0.0.1:8181", "http://127.0.0.1:8181/onos/v1", "karaf", "karaf"),
    ("https://onos:rocks@onos.example:8443/custom/root/", "https://onos.example:8443/custom/root", "onos", "rocks"),
    ("http://127.0.0.1:8181/", "http://127.0.0.1:8181/onos/v1", None, None),
    ("http://on%40s:p%3Ass%2Fw%40rd@10.0.0.1:8181", "http://10.0.0.1:8181/onos/v1", "on@s", "p:ss/w@rd"),
    ("http://karaf@[::1]:8181", "http://[::1]:8181/onos/v1", "karaf", None),
    ("http://karaf:@h:8181", "http://h:8181/onos/v1", "karaf", ""),
], ids=["doc-form", "no-scheme", "https-root", "no-credentials", "percent-encoded", "ipv6-user-only",
        "empty-password"])
def test_credentials_are_split_from_the_url(url, base, user, password):
    """user:password@host is taken out of the URL (treq cannot send it) and decoded for HTTP Basic."""
    target = parse_target(url)
    assert (target.base_url, target.user, target.password) == (base, user, password)
    assert "@" not in target.base_url


def test_options_win_over_the_urls_credentials():
    """--user and --password replace what the URL carries."""
    target = parse_target("http://karaf:karaf@h:8181", user="onos", password="rocks")
    assert target.auth == ("onos", "rocks")


def test_display_never_shows_the_password():
    """The URL printed in progress and reports shows the user and hides the password."""
    target = parse_target("https://karaf:s3cret@h:8181")
    assert target.display() == "https://karaf:***@h:8181/onos/v1" and target.https
    assert parse_target("http://h:8181").display() == "http://h:8181/onos/v1"


def test_paths_are_percent_encoded_per_segment():
    """App names go into the path as one encoded segment each; the query is kept."""
    target = parse_target("http://h:8181")
    assert target.url("applications", "org.opencord.olt", "bits") == \
        "http://h:8181/onos/v1/applications/org.opencord.olt/bits"
    assert target.url("applications", "a/b") == "http://h:8181/onos/v1/applications/a%2Fb"
    assert target.url("applications", query="activate=true").endswith("/applications?activate=true")


@pytest.mark.parametrize("url, message", [
    ("ftp://h:8181", "http:// or https://"), ("http://", "no host"), ("http://h:99999", "bad port"),
    ("http://h:8181/?x=1", "query"), ("http://:pw@h:8181", "without a user name"),
])
def test_bad_urls_are_refused(url, message):
    """Malformed controller URLs are usage errors, before any request."""
    with pytest.raises(ValueError, match=message):
        parse_target(url)


def test_ca_bundle_needs_a_certificate(tmp_path):
    """A CA file without a PEM certificate is refused with its name."""
    path = tmp_path / "ca.pem"
    path.write_text("not a certificate")
    with pytest.raises(ValueError, match="no PEM certificate"):
        read_ca_bundle(str(path))


def oar(xml: bytes | None, extra: bool = True) -> bytes:
    """A zip archive with the given app.xml (None: without one)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        if xml is not None:
            z.writestr("app.xml", xml)
        if extra:
            z.writestr("m2/x.jar", b"jar")
    return buf.getvalue()


APP_XML = b'<?xml version="1.0"?><app name="org.opencord.olt" version="4.5.0-SNAPSHOT" apps="org.opencord.sadis"/>'


def test_archive_name_version_and_requirements():
    """An .oar's app.xml gives the name, the version in the controller's form and the required apps."""
    info = read_archive(oar(APP_XML))
    assert (info.name, info.version, info.required_apps) == ("org.opencord.olt", "4.5.0.SNAPSHOT",
                                                             ("org.opencord.sadis",))
    assert read_archive(APP_XML) == info  # a bare app.xml is an archive too


@pytest.mark.parametrize("data, message", [
    (b"\x00\x01garbage", "neither a zip"), (oar(None), "no app.xml"), (oar(b"<app name="), "not well-formed"),
    (oar(b'<feature name="x" version="1"/>'), "not <app>"), (oar(b'<app name="x"/>'), "no name or no version"),
    (b"PK\x03\x04broken", "not a readable zip"),
], ids=["garbage", "no-app-xml", "bad-xml", "wrong-root", "no-version", "broken-zip"])
def test_unreadable_archives_are_refused(data, message):
    """Archives without a readable app.xml are refused before the controller is touched."""
    with pytest.raises(BadArchive, match=message):
        read_archive(data)


def test_expected_version_checks_name_and_version():
    """The archive must be the app being updated and, if given, the expected version."""
    info = read_archive(APP_XML)
    assert expected_version(info, "org.opencord.olt", None) == "4.5.0.SNAPSHOT"
    assert expected_version(info, "org.opencord.olt", "4.5.0-SNAPSHOT") == "4.5.0.SNAPSHOT"
    with pytest.raises(ValueError, match="not org.opencord.aaa"):
        expected_version(info, "org.opencord.aaa", None)
    with pytest.raises(ValueError, match="not 4.5.1 as expected"):
        expected_version(info, "org.opencord.olt", "4.5.1")


def test_rollback_copy_is_never_overwritten(tmp_path):
    """The saved archive keeps its name; the same bytes reuse it, different bytes get a numbered sibling."""
    first = write_backup(tmp_path / "b", "org.opencord.olt", "5.2.7", b"one")
    assert first.name == "org.opencord.olt-5.2.7.oar" and first.read_bytes() == b"one"
    assert write_backup(tmp_path / "b", "org.opencord.olt", "5.2.7", b"one") == first
    second = write_backup(tmp_path / "b", "org.opencord.olt", "5.2.7", b"two")
    assert second.name == "org.opencord.olt-5.2.7.1.oar" and first.read_bytes() == b"one"
    assert not list((tmp_path / "b").glob("*.tmp"))
    assert write_backup(tmp_path, "../evil", "1/2", b"x").parent == tmp_path
