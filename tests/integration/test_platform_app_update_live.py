"""oltsim-platform app-update against the fake controller on 127.0.0.1, real reactor, real HTTP(S) with treq."""
from __future__ import annotations

import datetime
import io
import ipaddress
import os
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
import pytest_twisted
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from twisted.internet import endpoints, reactor
from twisted.internet.defer import inlineCallbacks
from twisted.internet.utils import getProcessOutputAndValue
from twisted.web.server import Site

from fake_controller import FakeController, make_oar

from oltsim.platform.appupdate import (EXIT_MANUAL, EXIT_ROLLED_BACK, EXIT_UNCHANGED, EXIT_UPDATED, AppUpdate,
                                       Timing, UpdateRequest)
from oltsim.platform.archive import read_archive
from oltsim.platform.controller import ApplicationsClient, make_http_client, parse_target
from oltsim.platform.progress import Progress

OLT = "org.opencord.olt"
SADIS = "org.opencord.sadis"
AAA = "org.opencord.aaa"
OLD_OAR = make_oar(OLT, "5.2.7")
NEW_OAR = make_oar(OLT, "5.2.8")
FAST = Timing(poll_interval=0.02, remove_timeout=2.0, ready_timeout=1.0)
OP_TIMEOUT = 0.1  # the controller's 2 s store wait, scaled down
ROOT = Path(__file__).resolve().parents[2]


def platform_fake(**kwargs) -> FakeController:
    """A controller running sadis, aaa and olt 5.2.7, all ACTIVE."""
    fake = FakeController(reactor, operation_timeout=OP_TIMEOUT, **kwargs)
    fake.preinstall(make_oar(SADIS, "5.12.3"))
    fake.preinstall(make_oar(AAA, "2.11.2"))
    fake.preinstall(OLD_OAR)
    return fake


class Served:
    """The fake controller listening on an endpoint string; `stop()` closes it and cancels its timers."""

    def __init__(self, fake, endpoint="tcp:0:interface=127.0.0.1"):
        self.fake = fake
        self.endpoint = endpoint
        self.port = None

    @inlineCallbacks
    def start(self):
        site = Site(self.fake.app.resource())
        self.port = yield endpoints.serverFromString(reactor, self.endpoint).listen(site)
        return self

    @property
    def number(self) -> int:
        return self.port.getHost().port

    @inlineCallbacks
    def stop(self):
        yield self.port.stopListening()
        self.fake.stop()


@inlineCallbacks
def run_update(url, tmp_path, archive=NEW_OAR, timing=FAST, watch=None, user=None, password=None, ca=None):
    """Run one update with the library API; (report, progress text)."""
    target = parse_target(url, user=user, password=password, ca_file=ca)
    client = ApplicationsClient(make_http_client(reactor, target), target, reactor, timeout=5.0)
    stream = io.StringIO()
    info = read_archive(archive)
    request = UpdateRequest(OLT, archive, info, info.version, tmp_path / "backup", watch=watch, timing=timing)
    report = yield AppUpdate(client, reactor, Progress(reactor, stream), request).run()
    return report, stream.getvalue()


def steps_of(progress: str) -> list[tuple[str, str]]:
    """(step, status) of each progress line `[   0.12s] step  status  detail`."""
    return [tuple(line.split("]", 1)[1].split()[:2]) for line in progress.splitlines()]


def state(fake, name=OLT):
    """(version, state) of an app in the fake, or None."""
    entry = fake.apps.get(name)
    return None if entry is None else (entry.version, entry.state)


@pytest_twisted.inlineCallbacks
def test_update_succeeds_and_keeps_a_rollback_copy(tmp_path):
    """A good archive replaces the app: new version ACTIVE and ready, same app id, old archive saved, exit 0."""
    served = yield Served(platform_fake()).start()
    try:
        old_id = served.fake.apps[OLT].id
        report, progress = yield run_update(f"http://karaf:karaf@127.0.0.1:{served.number}", tmp_path)
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_UPDATED and report.outcome == "updated", report.text()
    assert state(served.fake) == ("5.2.8", "ACTIVE")
    assert served.fake.apps[OLT].id == old_id
    assert Path(report.backup).read_bytes() == OLD_OAR
    assert report.old_version == "5.2.7" and report.new_version == "5.2.8"
    assert steps_of(progress) == [(step, "ok") for step in
                                  ("read", "backup", "delete", "removed", "install", "active", "healthy", "verify")]
    assert served.fake.calls("DELETE") == [f"/onos/v1/applications/{OLT}"]


@pytest_twisted.inlineCallbacks
def test_slow_store_is_waited_for(tmp_path):
    """When the store lands changes after the 2 s helper gives up, the update waits for 404 and ACTIVE itself."""
    served = yield Served(platform_fake(store_delay=0.3)).start()
    try:
        report, progress = yield run_update(f"http://karaf:karaf@127.0.0.1:{served.number}", tmp_path)
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_UPDATED, report.text() + progress
    assert state(served.fake) == ("5.2.8", "ACTIVE")
    install = next(line for line in progress.splitlines() if " install " in line)
    assert "INSTALLED" in install  # the POST answered before the activation landed


@pytest.mark.parametrize("archive, why", [
    (make_oar(OLT, "5.2.8", corrupt=True), "Unable to save application"),
    (make_oar(OLT, "5.2.8", required=["org.opencord.kafka"]), "Missing dependencies"),
], ids=["bad-archive", "missing-dependency"])
@pytest_twisted.inlineCallbacks
def test_rejected_archive_is_rolled_back(tmp_path, archive, why):
    """A 400 on install (bad archive, missing dependency) ends with the saved archive reinstalled and verified."""
    served = yield Served(platform_fake()).start()
    try:
        report, progress = yield run_update(f"http://karaf:karaf@127.0.0.1:{served.number}", tmp_path, archive)
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_ROLLED_BACK and report.outcome == "rolled-back", report.text() + progress
    assert why in report.failure and report.failure.startswith("install:")
    assert state(served.fake) == ("5.2.7", "ACTIVE")
    assert served.fake.uploads[-1] == OLD_OAR
    assert "rollback-healthy" in progress and report.rollback.startswith("verified")


@pytest_twisted.inlineCallbacks
def test_app_that_never_becomes_healthy_is_rolled_back(tmp_path):
    """ACTIVE is not enough: a new version whose /health stays pending times out and the old one comes back."""
    fake = platform_fake()
    fake.never_healthy.add((OLT, "5.2.8"))
    served = yield Served(fake).start()
    try:
        report, progress = yield run_update(f"http://karaf:karaf@127.0.0.1:{served.number}", tmp_path)
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_ROLLED_BACK, report.text() + progress
    assert report.failure.startswith("healthy: timed out") and "pending" in report.failure
    assert state(fake) == ("5.2.7", "ACTIVE")


@pytest_twisted.inlineCallbacks
def test_store_slower_than_the_ready_timeout_is_rolled_back(tmp_path):
    """An activation that lands after the ready timeout fails the update; the rollback cancels it and restores."""
    fake = platform_fake()
    fake.activation_delay[(OLT, "5.2.8")] = 30.0
    served = yield Served(fake).start()
    try:
        report, progress = yield run_update(f"http://karaf:karaf@127.0.0.1:{served.number}", tmp_path)
        assert fake.pending_timers() == 0  # the rollback's DELETE cancelled the pending activation
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_ROLLED_BACK, report.text() + progress
    assert report.failure.startswith("active: timed out") and "INSTALLED" in report.failure
    assert state(fake) == ("5.2.7", "ACTIVE")


@pytest_twisted.inlineCallbacks
def test_watched_app_that_drops_is_rolled_back_and_reactivated(tmp_path):
    """If deleting the app deactivates another one, the update stops, rolls back and re-activates it."""
    fake = platform_fake()
    fake.deactivates[OLT] = [AAA]
    served = yield Served(fake).start()
    try:
        report, progress = yield run_update(f"http://karaf:karaf@127.0.0.1:{served.number}", tmp_path)
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_ROLLED_BACK, report.text() + progress
    assert report.failure.startswith("removed: watched apps no longer ACTIVE") and AAA in report.failure
    assert state(fake) == ("5.2.7", "ACTIVE") and state(fake, AAA) == ("2.11.2", "ACTIVE")
    assert f"/onos/v1/applications/{AAA}/active" in fake.calls("POST")


@pytest_twisted.inlineCallbacks
def test_failed_rollback_exits_for_manual_action(tmp_path):
    """When the old version cannot be brought back either, the exit code and report ask for manual action."""
    fake = platform_fake()
    fake.never_healthy.update({(OLT, "5.2.8"), (OLT, "5.2.7")})
    served = yield Served(fake).start()
    try:
        report, progress = yield run_update(f"http://karaf:karaf@127.0.0.1:{served.number}", tmp_path)
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_MANUAL and report.outcome == "rollback-failed", report.text() + progress
    assert report.rollback.startswith("failed: rollback-healthy")
    assert report.backup in report.problems[0]


@pytest_twisted.inlineCallbacks
def test_wrong_credentials_change_nothing(tmp_path):
    """A 401 on the first call ends the run with exit 1 and no DELETE or POST sent."""
    served = yield Served(platform_fake()).start()
    try:
        report, progress = yield run_update(f"http://karaf:wrong@127.0.0.1:{served.number}", tmp_path)
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_UNCHANGED and report.outcome == "unchanged"
    assert "401" in report.failure and "wrong" not in progress + report.text()
    assert served.fake.calls("DELETE") == [] and served.fake.calls("POST") == []
    assert state(served.fake) == ("5.2.7", "ACTIVE")


@pytest_twisted.inlineCallbacks
def test_percent_encoded_credentials_in_the_url_and_options(tmp_path):
    """userinfo is split off the URL and percent-decoded; --user/--password given as options win over it."""
    served = yield Served(platform_fake(users={"on@s": "p:ss/w@rd"})).start()
    try:
        url = f"http://{quote('on@s', safe='')}:{quote('p:ss/w@rd', safe='')}@127.0.0.1:{served.number}"
        report, _ = yield run_update(url, tmp_path)
        assert report.exit_code == EXIT_UPDATED, report.text()
        report2, _ = yield run_update(f"http://karaf:karaf@127.0.0.1:{served.number}/onos/v1", tmp_path,
                                      archive=OLD_OAR, user="on@s", password="p:ss/w@rd")
        assert report2.exit_code == EXIT_UPDATED, report2.text()
    finally:
        yield served.stop()
    assert state(served.fake) == ("5.2.7", "ACTIVE")


@pytest_twisted.inlineCallbacks
def test_app_required_by_another_is_refused(tmp_path):
    """Deleting an app that another installed app requires would cascade: refused before anything changes."""
    fake = platform_fake()
    fake.preinstall(make_oar("org.opencord.kafka", "2.13.3", required=[OLT]))
    served = yield Served(fake).start()
    try:
        report, _ = yield run_update(f"http://karaf:karaf@127.0.0.1:{served.number}", tmp_path)
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_UNCHANGED and "org.opencord.kafka require" in report.failure
    assert fake.calls("DELETE") == [] and report.backup is None


def make_ca(tmp_path: Path, name: str, ip: str = "127.0.0.1", dns: str = "localhost"):
    """A test CA and a server certificate for `ip` and `dns` signed by it; (ca.pem, key.pem, cert.pem)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"oltsim test CA {name}")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip)),
                                                        x509.DNSName(dns)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    paths = tuple(tmp_path / f"{name}-{kind}.pem" for kind in ("ca", "key", "cert"))
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    paths[2].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return paths


@pytest_twisted.inlineCallbacks
def test_https_verified_with_a_custom_ca(tmp_path):
    """Over HTTPS the certificate is verified against --ca: the right CA updates, another CA changes nothing."""
    ca, key, cert = make_ca(tmp_path, "good")
    other_ca, _, _ = make_ca(tmp_path, "other")
    served = yield Served(platform_fake(), f"ssl:0:interface=127.0.0.1:privateKey={key}:certKey={cert}").start()
    try:
        url = f"https://karaf:karaf@127.0.0.1:{served.number}"
        refused, _ = yield run_update(url, tmp_path, ca=str(other_ca))
        assert refused.exit_code == EXIT_UNCHANGED and "TLS" in refused.failure, refused.text()
        assert served.fake.requests == []
        report, progress = yield run_update(url, tmp_path, ca=str(ca))
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_UPDATED, report.text() + progress
    assert state(served.fake) == ("5.2.8", "ACTIVE")


@pytest_twisted.inlineCallbacks
def test_https_checks_the_host_name_with_service_identity(tmp_path):
    """A certificate from the trusted CA but for another host is refused: the name is checked, not just the chain."""
    ca, key, cert = make_ca(tmp_path, "elsewhere", ip="192.0.2.7", dns="onos.example")
    served = yield Served(platform_fake(), f"ssl:0:interface=127.0.0.1:privateKey={key}:certKey={cert}").start()
    try:
        report, _ = yield run_update(f"https://karaf:karaf@127.0.0.1:{served.number}", tmp_path, ca=str(ca))
    finally:
        yield served.stop()
    assert report.exit_code == EXIT_UNCHANGED, report.text()
    assert "TLS: the controller's certificate is not for this host" in report.failure
    assert served.fake.requests == []


@inlineCallbacks
def run_cli(*args):
    """Run `python -m oltsim.platform.cli ...` as a child process; (stdout, stderr, exit code)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out, err, code = yield getProcessOutputAndValue(sys.executable, ("-m", "oltsim.platform.cli") + args,
                                                    env=env, path=str(ROOT))
    return out.decode(), err.decode(), code


@pytest_twisted.inlineCallbacks
def test_cli_updates_with_progress_on_stderr_and_report_on_stdout(tmp_path):
    """The console command runs the update under task.react: progress lines on stderr, the report on stdout."""
    oar = tmp_path / "olt-5.2.8.oar"
    oar.write_bytes(NEW_OAR)
    served = yield Served(platform_fake()).start()
    try:
        out, err, code = yield run_cli(
            "app-update", "--controller", f"http://karaf:karaf@127.0.0.1:{served.number}", "--app", "olt",
            "--oar", str(oar), "--backup-dir", str(tmp_path / "b"), "--poll-interval", "0.02",
            "--remove-timeout", "2", "--ready-timeout", "2")
    finally:
        yield served.stop()
    assert code == EXIT_UPDATED, out + err
    assert "updated (exit 0)" in out and "5.2.7" in out
    assert steps_of(err.split("\n", 1)[1])[-1] == ("verify", "ok")
    assert "karaf:karaf" not in out + err
    assert state(served.fake) == ("5.2.8", "ACTIVE")


@pytest_twisted.inlineCallbacks
def test_cli_dry_run_prints_the_calls_and_sends_nothing(tmp_path):
    """--dry-run lists the calls in order, hides the password, and never contacts the controller."""
    oar = tmp_path / "olt.oar"
    oar.write_bytes(NEW_OAR)
    served = yield Served(platform_fake()).start()
    try:
        out, err, code = yield run_cli("app-update", "--dry-run", "--controller",
                                       f"http://karaf:secret@127.0.0.1:{served.number}", "--app", OLT,
                                       "--oar", str(oar))
    finally:
        yield served.stop()
    assert code == 0, out + err
    methods = [line.split()[1] for line in out.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert methods == ["GET", "GET", "GET", "DELETE", "GET", "POST", "GET", "GET", "GET"]
    assert "activate=true" in out and "application/octet-stream" in out and "secret" not in out
    assert served.fake.requests == []
