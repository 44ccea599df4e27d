"""deploy/helm/oltsim rendered by the real `helm template` with the data plane's values: the VXLAN UDP port in every
OLT's container and Service, the settings in its oltsim.yaml (loaded by oltsim without a warning), none of it without
the data plane, and TAP attachments refused with one message.

Needs the `helm` program (Helm 3) on PATH, else the tests skip with the reason: Debian has no package of it, and the
tests download nothing. tests/unit/test_deploy.py checks the same templates without Helm."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from oltsim.config import load_settings

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "oltsim"
HELM = shutil.which("helm")

pytestmark = pytest.mark.skipif(HELM is None, reason="needs helm (Helm 3) on PATH; Debian does not package it")

DATAPLANE = ["--set", "dataplane.enabled=true", "--set", "dataplane.vxlanPort=4790", "--set",
             "dataplane.uniInterfaces=all", "--set", "dataplane.vxlanRemote=192.0.2.9", "--set",
             "dataplane.vxlanHold=60", "--set", "dataplane.nniInterface=nni", "--set", "oltCount=2"]


def helm_template(*arguments: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([HELM, "template", "olts", str(CHART), "--namespace", "voltha", *arguments],
                          capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def documents(*arguments: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(helm_template(*arguments).stdout) if doc]


def of_kind(docs: list[dict], kind: str) -> list[dict]:
    return [doc for doc in docs if doc["kind"] == kind]


def udp_ports(doc: dict) -> list[dict]:
    if doc["kind"] == "Service":
        ports = doc["spec"]["ports"]
    else:
        ports = doc["spec"]["template"]["spec"]["containers"][0]["ports"]
    return [port for port in ports if port.get("protocol") == "UDP"]


def test_the_data_plane_values_render_the_udp_port_and_the_settings(tmp_path):
    """Every OLT's container and Service get the UDP port `vxlan` at dataplane.vxlanPort, and its oltsim.yaml the
    VXLAN settings, which oltsim loads without a warning."""
    docs = documents(*DATAPLANE)
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


def test_without_the_data_plane_nothing_of_it_is_rendered():
    """The default values render no UDP port and no data-plane key."""
    docs = documents()
    assert all(udp_ports(doc) == [] for doc in docs if doc["kind"] in ("Deployment", "Service"))
    assert all("vxlan" not in doc["data"]["oltsim.yaml"] for doc in of_kind(docs, "ConfigMap"))


def test_tap_attachments_are_refused_in_one_message():
    """dataplane.attachment=tap fails the rendering, saying why (the pods have no NET_ADMIN nor /dev/net/tun)."""
    done = helm_template("--set", "dataplane.enabled=true", "--set", "dataplane.attachment=tap", check=False)
    assert done.returncode != 0 and "only vxlan runs in this chart's pods" in done.stderr, done.stderr
