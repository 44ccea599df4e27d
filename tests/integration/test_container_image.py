"""deploy/Dockerfile built into an image by podman, and the image run the way deploy/helm/oltsim's Deployment runs it
(its rendered args, securityContext and mounts: read-only root, no capability, no new privileges, the ConfigMap's
oltsim.yaml at /etc/oltsim, /tmp writable) and the way VOLTHA's bbsim chart runs BBSim (`/app/bbsim -olt_id ...`):
each in a network namespace of the test's own, which holds the container's listeners (the chart's ports on every
address) and the test's clients. Then docs/dataplane.md's RG pod, its container run beside such an OLT.

Needs root, podman (it builds and runs OCI images with no daemon), runc and mmdebstrap: installed with apt-get when
OLTSIM_TEST_INSTALL=1 (CI), else the tests skip with the reason; `-m "not image"` leaves them out. The Dockerfile's
base, python:3.11-slim-bookworm, is on Docker Hub, which a test machine may not reach: the build is given a
stand-in (its PYTHON_IMAGE argument), Debian bookworm with Debian's Python 3.11 made by mmdebstrap from Debian's
archive, which trusts the host's CA bundle so that pip in the build reaches the package index as the host does.
OLTSIM_TEST_BASE_IMAGE names another base to build from instead (python:3.11-slim-bookworm where it can be pulled).
Podman keeps its images under the test's temporary directory (vfs storage), removed at the end.
"""
from __future__ import annotations

import ctypes
import os
import resource
import shutil
import socket
import struct
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml

from headless import INSTALL_VARIABLE, apt_install, install_allowed
from netlab import Lab, LabUnavailable, require
from test_daemon import rest_get_json
from test_deb import eap_over_vxlan, eapol_start, status_fields
from test_helm_dataplane import documents, helm, of_kind  # noqa: F401 (helm: the fixture)

pytestmark = pytest.mark.image

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
IMAGE = "localhost/oltsim:image-test"
BASE = "localhost/oltsim-image-test-base:python3.11-bookworm"
#: what the stand-in base holds: Python 3.11 with venv (ensurepip) and `python`, as python:3.11-slim has them
BASE_PACKAGES = "python3.11,python3-venv,python-is-python3,ca-certificates"
DEBIAN_MIRROR = os.environ.get("OLTSIM_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")
CA_BUNDLE = Path(os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt")
TOOLS = {"podman": "podman", "runc": "runc", "mmdebstrap": "mmdebstrap"}
BASE_TIMEOUT = 600.0
BUILD_TIMEOUT = 1500.0     # pip downloads on a cold cache, vfs copies of every layer
START_TIMEOUT = 90.0
RG_TIMEOUT = 60.0
#: The image's user (deploy/Dockerfile: numeric, for Kubernetes' runAsNonRoot)
IMAGE_UID = 10001
REST_PORT = 50071          # the chart's and BBSim's v1 REST port
VXLAN_PORT = 4789
#: The RG's side of the VXLAN segment: another loopback address of the namespace, where oltsim sends
RG_ADDRESS = "127.0.0.2"
CLONE_NEWNET = 0x40000000


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (podman's rootful storage, network namespaces)"
    missing = [package for tool, package in TOOLS.items() if shutil.which(tool) is None]
    if not missing:
        return None
    if not install_allowed():
        return f"needs {', '.join(missing)} (apt-get install, or {INSTALL_VARIABLE}=1 to let the tests install them)"
    failure = apt_install(missing)
    still = [tool for tool in TOOLS if shutil.which(tool) is None]
    return failure or (f"apt-get installed {', '.join(missing)}, yet {', '.join(still)} is not on PATH"
                       if still else None)


class Podman:
    """podman with its storage under `root`: vfs (no overlay mount needed), cgroupfs, runc (crun refuses the hybrid
    cgroup hierarchies some VMs have), events in a file (no journald)."""

    def __init__(self, root: Path):
        self.command = ["podman", "--root", str(root / "storage"), "--runroot", str(root / "run"),
                        "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "file",
                        "--runtime", "runc"]

    def __call__(self, *arguments: str, timeout: float = 120.0, check: bool = True,
                 log: Path | None = None) -> subprocess.CompletedProcess:
        if log is not None:
            with log.open("w") as out:
                done = subprocess.run([*self.command, *arguments], stdout=out, stderr=subprocess.STDOUT,
                                      text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            if check and done.returncode != 0:
                tail = "\n".join(log.read_text().splitlines()[-40:])
                raise AssertionError(f"podman {arguments[0]} exited {done.returncode}:\n{tail}")
            return done
        done = subprocess.run([*self.command, *arguments], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(arguments[:2])} exited {done.returncode}: {done.stderr[-2000:]}")
        return done

    def build(self, context: Path, tag: str, *arguments: str, log: Path) -> None:
        """`podman build` of `context` tagged `tag`, its RUN steps on the host's network (for the package indexes);
        its output in `log`, whose tail a failure shows."""
        self("build", "--network", "host", "--isolation", "chroot", *arguments, "--tag", tag, str(context),
             timeout=BUILD_TIMEOUT, log=log)

    def state(self, container: str, field: str) -> str:
        """`podman inspect`'s .State.`field` of `container`."""
        return self("inspect", "--format", f"{{{{.State.{field}}}}}", container).stdout.strip()

    def run_options(self) -> list[str]:
        """What every container is run with: limits no higher than this process's (podman's own defaults raise
        them, which a host without CAP_SYS_RESOURCE refuses)."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        files = min(soft, 65536)
        return ["--ulimit", f"nofile={files}:{files}", "--ulimit", "nproc=4096:4096"]


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("podman")
    tool = Podman(root)
    yield tool
    tool("rm", "--all", "--force", "--time", "0", check=False)
    tool("rmi", "--all", "--force", check=False)
    shutil.rmtree(root, ignore_errors=True)


def _stand_in_base(podman: Podman, work: Path) -> str:
    """Debian bookworm with Python 3.11, the host's CA bundle and PIP_CERT naming it, imported as BASE."""
    if not CA_BUNDLE.exists():
        pytest.skip(f"no CA bundle at {CA_BUNDLE} to give the image's pip (SSL_CERT_FILE names another)")
    rootfs = work / "base.tar"
    log = work / "mmdebstrap.log"
    with log.open("w") as out:
        done = subprocess.run(["mmdebstrap", "--variant=minbase", f"--include={BASE_PACKAGES}",
                               f"--customize-hook=upload {CA_BUNDLE} /etc/ssl/certs/ca-certificates.crt",
                               "--format=tar", "bookworm", str(rootfs), DEBIAN_MIRROR],
                              stdout=out, stderr=subprocess.STDOUT, timeout=BASE_TIMEOUT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, "mmdebstrap failed:\n" + "\n".join(log.read_text().splitlines()[-30:])
    podman("import", "--change", "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt",
           "--change", "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", str(rootfs), BASE, timeout=300)
    rootfs.unlink()
    return BASE


@pytest.fixture(scope="module")
def base(podman, tmp_path_factory) -> str:
    """What the image is built from: OLTSIM_TEST_BASE_IMAGE, or the stand-in made here."""
    return os.environ.get("OLTSIM_TEST_BASE_IMAGE") or _stand_in_base(podman, tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="module")
def image(podman, base, tmp_path_factory) -> str:
    """deploy/Dockerfile built from the repository (its .dockerignore's context), tagged IMAGE."""
    work = tmp_path_factory.mktemp("image")
    podman.build(REPO, IMAGE, "--build-arg", f"PYTHON_IMAGE={base}", "--file", str(DOCKERFILE),
                 log=work / "build.log")
    return IMAGE


@pytest.fixture
def netns(tmp_path):
    """A network namespace of the test's own (netlab.Lab's, loopback up, deleted after the test): its path, for
    podman's `--network ns:`."""
    lab = Lab(tmp_path)
    try:
        yield Path("/run/netns") / lab.netns(f"{lab.prefix}img")
    finally:
        lab.close()


def in_netns(path: Path, call):
    """`call()` on a thread moved into the network namespace at `path` (setns: the sockets it makes are the
    namespace's); its result, or its exception raised here."""
    outcome = {}

    def moved():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            with open(path) as namespace:
                if libc.setns(namespace.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {path}")
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=moved)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def rest_get(path: Path, url: str, port: int = REST_PORT):
    """GET `url` on 127.0.0.1:`port` in the namespace: (status, JSON)."""
    return in_netns(path, lambda: rest_get_json(port, url))


def wait_serving(podman: Podman, container: str, path: Path, url: str) -> dict:
    """Until GET `url` answers 200 in the namespace (bounded); its JSON. The container's log in the error."""
    deadline = time.monotonic() + START_TIMEOUT
    last = None
    while time.monotonic() < deadline:
        state = podman.state(container, "Status")
        if state not in ("running", "created", "configured"):
            break
        try:
            status, body = rest_get(path, url)
            if status == 200:
                return body
            last = (status, body)
        except OSError as exc:
            last = exc
        time.sleep(0.5)
    logs = podman("logs", container, check=False)
    pytest.fail(f"GET {url} did not answer 200 within {START_TIMEOUT:g} s (last: {last!r}); container "
                f"{state}:\n{(logs.stdout + logs.stderr)[-4000:]}")


def stop(podman: Podman, container: str) -> int:
    """`podman stop` (SIGTERM, SIGKILL after 10 s) and the exit code: 0 only if the process ended on SIGTERM."""
    podman("stop", "--time", "10", container, timeout=60)
    return int(podman.state(container, "ExitCode"))


def chart_run_options(helm_path: str, config_dir: Path, *values: str) -> tuple[list[str], list[str], int]:
    """`helm template` of deploy/helm/oltsim with `values`: the first OLT's ConfigMap files written to `config_dir`,
    and its Deployment's container as podman options and arguments (securityContext, the config mount read-only,
    /tmp writable), with the OLT's id."""
    docs = documents(helm_path, *values)
    (deployment,) = of_kind(docs, "Deployment")[:1]
    (config,) = of_kind(docs, "ConfigMap")[:1]
    for name, text in config["data"].items():
        (config_dir / name).write_text(text)
    olt_id = yaml.safe_load(config["data"]["oltsim.yaml"])["olt"]["id"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    security = container["securityContext"]
    options = []
    if security.get("readOnlyRootFilesystem"):
        options.append("--read-only")
    for capability in security.get("capabilities", {}).get("drop", []):
        options += ["--cap-drop", capability]
    if security.get("allowPrivilegeEscalation") is False:
        options += ["--security-opt", "no-new-privileges"]
    user = pod.get("securityContext", {})
    if user.get("runAsUser") is not None:
        group = user.get("runAsGroup")
        options += ["--user", f"{user['runAsUser']}" + ("" if group is None else f":{group}")]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            options += ["--volume", f"{config_dir}:{mount['mountPath']}:ro"]
        elif "emptyDir" in volume:
            options += ["--tmpfs", mount["mountPath"]]
        else:
            raise AssertionError(f"a volume this test does not stand in for: {volume}")
    return options, list(container.get("args", [])), olt_id


def rg_exchange(vni: int, mac: bytes) -> bytes | None:
    """(in the namespace) An RG at RG_ADDRESS sends EAPOL-Starts on `vni` to oltsim's VXLAN port until the
    EAP-Request comes back over VXLAN (test_deb.eap_over_vxlan), then a datagram whose VXLAN header lacks the I
    flag. The EAP frame, None if none came."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rg:
        rg.bind((RG_ADDRESS, VXLAN_PORT))
        answer = eap_over_vxlan(rg, vni, mac, ("127.0.0.1", VXLAN_PORT), RG_TIMEOUT)
        rg.sendto(struct.pack("!II", 0, vni << 8) + eapol_start(mac), ("127.0.0.1", VXLAN_PORT))
    return answer


def test_the_image_runs_as_the_charts_deployment_runs_it_with_the_data_plane_over_vxlan(
        podman, image, helm, netns, tmp_path):
    """The chart rendered with the data plane on (OLT id 10, 16 ONUs, the built-in adapter, VXLAN listening on
    loopback): the image run with the Deployment's args, securityContext and mounts serves REST as that OLT, as its
    numeric non-root user with no capability and no new privileges on a read-only root; an RG's EAPOL-Start on its
    UNI's VNI is answered over VXLAN with the EAP-Request/Identity, a datagram without the VXLAN I flag is counted
    and dropped; SIGTERM stops it with exit status 0."""
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    options, arguments, olt_id = chart_run_options(
        helm, config_dir, "--set", "firstOltId=10", "--set", "olt.onu=16", "--set", "olt.adapter=builtin",
        "--set", "dataplane.enabled=true", "--set", "dataplane.vxlanListen=127.0.0.1")
    assert olt_id == 10
    assert "--read-only" in options and ["--cap-drop", "ALL"] == options[options.index("--cap-drop"):][:2]
    name = f"olt-{uuid.uuid4().hex[:8]}"
    podman("run", "--detach", "--name", name, "--network", f"ns:{netns}", *podman.run_options(), *options, image,
           *arguments)
    olt = wait_serving(podman, name, netns, "/v1/olt")
    assert (olt["ID"], olt["SerialNumber"]) == (10, "BBSIM_OLT_10"), olt
    fields = status_fields(int(podman.state(name, "Pid")))   # the container's first process, as the host sees it
    assert fields["Uid"].split()[0] == str(IMAGE_UID), fields["Uid"]
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapBnd"], 16) == 0 and fields["NoNewPrivs"] == "1"
    status, onus = rest_get(netns, "/v1/olt/onus")
    serials = [onu["SerialNumber"] for onu in onus["items"]]
    assert status == 200 and serials == [f"BBSM000a00{n:02x}" for n in range(1, 17)], serials
    status, counters = rest_get(netns, "/v1/dataplane")
    assert status == 200, counters
    (uni,) = [entry for entry in counters["interfaces"].values() if "serial" in entry]
    assert (uni["kind"], uni["vni"], uni["serial"]) == ("vxlan", 1000, "BBSM000a0001"), uni
    answer = in_netns(netns, lambda: rg_exchange(uni["vni"], bytes.fromhex(uni["mac"].replace(":", ""))))
    logs = podman("logs", name, check=False)
    assert answer is not None, f"no EAP-Request over VXLAN within {RG_TIMEOUT:g} s:\n{logs.stdout[-4000:]}"
    assert (answer[18], answer[22]) == (1, 1)          # EAP code Request, type Identity
    deadline = time.monotonic() + 10
    while True:
        status, counters = rest_get(netns, "/v1/dataplane")
        if counters["vxlan"]["dropped"].get("vxlan-bad-header") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert counters["vxlan"]["dropped"].get("vxlan-bad-header") == 1, counters["vxlan"]
    uni = counters["interfaces"][next(n for n, e in counters["interfaces"].items() if "serial" in e)]
    assert (uni["remote"], uni["remote_learned"]) == (RG_ADDRESS, True), uni
    assert stop(podman, name) == 0, podman("logs", name, check=False).stdout[-4000:]


def test_the_image_runs_bbsims_command_line_as_voltha_s_bbsim_chart_does(podman, image, netns):
    """`/app/bbsim -olt_id 10 -pon 2 -onu 16 -services configs/services.yaml` from the image's working directory, as
    VOLTHA's bbsim chart starts BBSim: the OLT on BBSim's ports with its 32 ONUs under BBSim's serials; SIGTERM
    stops it with exit status 0."""
    name = f"bbsim-{uuid.uuid4().hex[:8]}"
    podman("run", "--detach", "--name", name, "--network", f"ns:{netns}", *podman.run_options(), "--read-only",
           "--tmpfs", "/tmp", "--cap-drop", "ALL", "--entrypoint", "/app/bbsim", image,
           "-olt_id", "10", "-pon", "2", "-onu", "16", "-services", "configs/services.yaml")
    olt = wait_serving(podman, name, netns, "/v1/olt")
    assert (olt["ID"], olt["SerialNumber"]) == (10, "BBSIM_OLT_10"), olt
    status, onus = rest_get(netns, "/v1/olt/onus")
    serials = sorted(onu["SerialNumber"] for onu in onus["items"])
    assert status == 200 and serials == sorted(f"BBSM000a{pon:02x}{n:02x}" for pon in (0, 1) for n in range(1, 17))
    assert stop(podman, name) == 0, podman("logs", name, check=False).stdout[-4000:]


# ---- the RG pod of docs/dataplane.md -----------------------------------------------------------------------------

DOCS = REPO / "docs" / "dataplane.md"
RG_IMAGE = "localhost/oltsim-image-test-rg:bookworm"
#: what the chart's OLT Service name resolves to in the RG's container: the OLT's namespace's end of their veth
OLT_ADDRESS, RG_POD_ADDRESS = "10.77.1.1", "10.77.1.2"
BNG_SIDE, BNG_ADDRESS = "10.77.2.1", "10.77.2.2"
SERVER = "10.201.0.1"
LEASE_TIMEOUT = 120.0


def rg_pod() -> dict:
    """The RG pod manifest of docs/dataplane.md ("As a Kubernetes pod"), as written there."""
    text = DOCS.read_text()
    blocks = [block.split("\n", 1)[1] for block in text.split("```yaml")[1:]]
    (pod,) = [yaml.safe_load(block.split("```")[0]) for block in blocks if "kind: Pod" in block]
    return pod


def test_the_rg_pod_of_the_docs_authenticates_and_takes_a_lease_through_the_charts_oltsim(
        podman, base, image, helm, tmp_path):
    """docs/dataplane.md's RG pod, its container run by podman with the manifest's command, script and
    securityContext, next to the image run as the chart runs it (dataplane.enabled, olt.adapter=builtin, as the
    docs say) and a DHCP server on the untagged NNI's VNI: the RG's vx0 towards the OLT's Service name
    authenticates (EAP-MD5) and gets a lease, and pings the server. The pod and the OLT are two network namespaces
    joined by a veth only; the manifest's first line (apt-get) runs when its stand-in image is built, the rest in
    the container. podman's default capabilities lack NET_RAW, which containerd's (Kubernetes') hold: it is added."""
    from test_dataplane import DHCP_OK, EAP_OK
    from test_dataplane_vxlan_kernel import kernel_vxlan, quiet_netns, veth

    try:
        require("dnsmasq", "ping")
    except LabUnavailable as exc:
        pytest.skip(str(exc))
    pod = rg_pod()
    (container,) = pod["spec"]["containers"]
    script = container["args"][0]
    install, rest = script.split("\n", 1)
    assert install.startswith("apt-get "), install
    service_host = next(line.split("getent hosts ")[1].split()[0] for line in rest.splitlines() if "getent" in line)
    work = tmp_path / "rg-image"
    work.mkdir()
    # the manifest's debian:bookworm-slim stood in for by the image's bookworm base, as the image's base is
    (work / "Containerfile").write_text(f"FROM {base}\nRUN {install}\n")
    podman.build(work, RG_IMAGE, log=work / "build.log")

    lab = Lab(tmp_path)
    p = lab.prefix
    olt_name, rg_name = f"olt-{p}", f"rg-{p}"
    try:
        olt_ns, rg_ns, bng_ns = (quiet_netns(lab, f"{p}{n}") for n in ("olt", "rg", "bng"))
        veth(olt_ns, f"{p}o1", f"{OLT_ADDRESS}/24", rg_ns, "eth0", f"{RG_POD_ADDRESS}/24")
        veth(olt_ns, f"{p}o2", f"{BNG_SIDE}/24", bng_ns, f"{p}b", f"{BNG_ADDRESS}/24")
        config_dir = tmp_path / "config"
        config_dir.mkdir()
        options, arguments, _ = chart_run_options(helm, config_dir, "--set", "dataplane.enabled=true",
                                                  "--set", "olt.adapter=builtin")
        olt_path = Path("/run/netns") / olt_ns
        podman("run", "--detach", "--name", olt_name, "--network", f"ns:{olt_path}", *podman.run_options(),
               *options, image, *arguments)
        wait_serving(podman, olt_name, olt_path, "/v1/olt")
        # the BNG's stand-in: a DHCP server on the untagged NNI's VNI, sending once so that oltsim learns it
        kernel_vxlan(bng_ns, f"{p}vx", 2, BNG_SIDE, VXLAN_PORT, f"{SERVER}/16")
        lab.dnsmasq(bng_ns, f"{p}vx", "10.201.1.1", "10.201.1.254")
        subprocess.run(["ip", "netns", "exec", bng_ns, "ping", "-b", "-c", "1", "-W", "1", "10.201.255.255"],
                       capture_output=True, timeout=30)
        security = container.get("securityContext", {})
        rg_options = [f"--cap-add={cap}" for cap in security.get("capabilities", {}).get("add", [])]
        if security.get("allowPrivilegeEscalation") is False:
            rg_options += ["--security-opt", "no-new-privileges"]
        podman("run", "--detach", "--name", rg_name, "--network", f"ns:/run/netns/{rg_ns}", *podman.run_options(),
               "--cap-add=NET_RAW", *rg_options, "--add-host", f"{service_host}:{OLT_ADDRESS}",
               "--entrypoint", container["command"][0], RG_IMAGE, *container["command"][1:], rest)
        address = None
        deadline = time.monotonic() + LEASE_TIMEOUT
        while address is None and time.monotonic() < deadline:
            state = podman.state(rg_name, "Status")
            if state != "running":
                break
            address = lab.address(rg_ns, "vx0")
            time.sleep(0.5)
        logs = podman("logs", rg_name, check=False)
        assert address is not None and address.startswith("10.201.1."), \
            f"the RG's vx0 got no lease (container {state}):\n{(logs.stdout + logs.stderr)[-3000:]}"
        pinged = subprocess.run(["ip", "netns", "exec", rg_ns, "ping", "-c", "3", "-W", "2", SERVER],
                                capture_output=True, text=True, timeout=30)
        assert pinged.returncode == 0, pinged.stdout + pinged.stderr
        status, onus = rest_get(olt_path, "/v1/olt/onus")
        states = [(s["EapolState"], s["DhcpState"]) for onu in onus["items"] for uni in onu.get("unis", ())
                  for s in uni.get("services", ())]
        assert states and states[0] == (EAP_OK, DHCP_OK), states
        status, counters = rest_get(olt_path, "/v1/dataplane")
        (uni,) = [entry for entry in counters["interfaces"].values() if "serial" in entry]
        assert (uni["remote"], uni["remote_learned"]) == (RG_POD_ADDRESS, True), uni
    finally:
        for name in (rg_name, olt_name):
            podman("rm", "--force", "--time", "2", name, check=False)
        lab.close()
