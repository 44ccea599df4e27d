"""A fake controller (ONOS) applications API for the oltsim-platform tests, as onos-applications-api.md describes it.

Served by Klein on 127.0.0.1 with the real reactor. What it reproduces:

- base path /onos/v1, HTTP Basic (realm karaf), 401 with a challenge and a non-JSON body on bad credentials;
- error bodies `{"code": N, "message": ...}`; 404 messages that differ for never-registered and deleted names;
- persistent app ids (a reinstalled name keeps its id); versions in the controller's form (4.5.0.SNAPSHOT);
- GET /applications, /applications/{name}, /{name}/health, /{name}/bits;
- DELETE /applications/{name}: 204 always, no-op for absent names, cascade to apps whose requiredApps name it;
- POST /applications?activate=true with application/octet-stream: 200 with the app; 409 if the name is installed
  (also while a slow uninstall is pending); 400 "Unable to save application" for a bad archive (not a zip or
  app.xml, no app.xml, a corrupt member); 400 "Missing dependencies" with the bits purged; 415 other types;
- POST/DELETE /applications/{name}/active;
- the store: uninstall and activation land `store_delay` seconds later (per (name, version) for activation with
  `activation_delay`), and the request returns when it lands or after `operation_timeout` (2 s in ONOS),
  whichever is first; a no-op DELETE waits the full operation timeout;
- failure modes: `never_healthy` (name, version) pairs stay `pending`; `deactivates` makes uninstalling one app
  deactivate others (an OSGi-level dependency the controller does not model as requiredApps).

Every timer is an IDelayedCall on the given clock; `stop()` cancels what is left.
"""
from __future__ import annotations

import base64
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from xml.etree import ElementTree

from klein import Klein
from twisted.internet.task import deferLater

ROOT = "/onos/v1/applications"


def onos_version(version: str) -> str:
    """4.5.0-SNAPSHOT -> 4.5.0.SNAPSHOT, as the controller reports versions."""
    return ".".join(p for p in re.split(r"[.-]", version) if p)


def app_xml(name: str, version: str, required=()) -> bytes:
    """An app.xml as the controller's archives carry it."""
    apps = f' apps="{",".join(required)}"' if required else ""
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<app name="{name}" origin="ONF" version="{version}" '
            f'category="Traffic Steering" url="https://opencord.org" title="{name}" '
            f'featuresRepo="mvn:org.opencord/{name}/{version}/xml/features" features="{name}"{apps}>\n'
            f'  <description>{name} for tests</description>\n</app>\n').encode()


JAR_PAYLOAD = b"compiled classes of the app, for tests " * 8


def make_oar(name: str, version: str, required=(), corrupt: bool = False) -> bytes:
    """An .oar: a zip with app.xml at its root and a bundle jar; `corrupt` spoils the jar's bytes so its CRC
    fails (app.xml stays readable: only the controller, expanding the whole archive, notices)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("app.xml", app_xml(name, version, required))
        z.writestr(f"m2/org/opencord/{name}/{version}/{name}-{version}.jar", JAR_PAYLOAD)
    data = buf.getvalue()
    if corrupt:
        at = data.index(JAR_PAYLOAD)
        data = data[:at] + b"X" + data[at + 1:]
    return data


class BadArchive(Exception):
    """What ONOS reports as ApplicationException: Unable to save application."""


def parse_archive(data: bytes) -> tuple[str, str, list[str]]:
    """(name, version, requiredApps) of an archive, as the controller reads it, or BadArchive."""
    try:
        if data[:2] == b"PK":
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                if z.testzip() is not None:
                    raise BadArchive("corrupt member")
                xml = z.read("app.xml")
        elif data.lstrip()[:1] == b"<":
            xml = data
        else:
            raise BadArchive("not zip or xml")
        root = ElementTree.fromstring(xml)
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError) as exc:
        raise BadArchive(str(exc)) from None
    name, version = root.get("name"), root.get("version")
    if root.tag != "app" or not name or not version:
        raise BadArchive("no app name or version")
    required = [a.strip() for a in (root.get("apps") or "").split(",") if a.strip()]
    return name, onos_version(version), required


@dataclass
class FakeApp:
    """An installed app: the store entry, its bits and the pending store events."""

    name: str
    id: int
    version: str
    required: list[str]
    bits: bytes
    state: str = "INSTALLED"
    removing: bool = False
    pending: list = field(default_factory=list)


class FakeController:
    """The applications API with the controller's semantics and configurable failure modes."""

    app = Klein()

    def __init__(self, clock, users=None, operation_timeout: float = 2.0, store_delay: float = 0.0):
        self.clock = clock
        self.users = dict(users if users is not None else {"karaf": "karaf"})
        self.operation_timeout = operation_timeout
        self.store_delay = store_delay
        self.activation_delay: dict[tuple[str, str], float] = {}
        self.never_healthy: set[tuple[str, str]] = set()
        self.deactivates: dict[str, list[str]] = {}
        self.apps: dict[str, FakeApp] = {}
        self.ids: dict[str, int] = {}
        self.requests: list[tuple[str, str]] = []
        self.uploads: list[bytes] = []
        self._timers = []

    # ---- test helpers ---------------------------------------------------------------------------

    def preinstall(self, archive: bytes, active: bool = True) -> FakeApp:
        """Install (and activate) an archive at once, as at start-up."""
        name, version, required = parse_archive(archive)
        entry = FakeApp(name, self._register(name), version, required, archive)
        entry.state = "ACTIVE" if active else "INSTALLED"
        self.apps[name] = entry
        return entry

    def stop(self) -> None:
        """Cancel every pending store event."""
        for call in self._timers:
            if call.active():
                call.cancel()
        self._timers.clear()

    def pending_timers(self) -> int:
        """How many store events are still scheduled."""
        return sum(1 for c in self._timers if c.active())

    def calls(self, method: str) -> list[str]:
        """The paths requested with `method`, in order."""
        return [p for m, p in self.requests if m == method]

    # ---- store ----------------------------------------------------------------------------------

    def _register(self, name: str) -> int:
        if name not in self.ids:
            self.ids[name] = len(self.ids) + 1
        return self.ids[name]

    def _later(self, delay: float, f, *args):
        call = self.clock.callLater(delay, f, *args)
        self._timers.append(call)
        return call

    def _respond_after(self, delay: float, body_fn):
        """The 2 s helper: answer when the store event lands or after the operation timeout."""
        wait = min(delay, self.operation_timeout)
        return deferLater(self.clock, wait, body_fn)

    def _uninstall(self, name: str) -> float:
        """Start uninstalling (with cascade); the delay until the store event lands, or None if no-op."""
        entry = self.apps.get(name)
        if entry is None or entry.removing:
            return None
        entry.removing = True
        for call in entry.pending:
            if call.active():
                call.cancel()
        for other in list(self.apps.values()):
            if name in other.required and not other.removing:
                self._uninstall(other.name)
        for other in self.deactivates.get(name, ()):
            if other in self.apps:
                self.apps[other].state = "INSTALLED"

        def landed():
            if self.apps.get(name) is entry:
                del self.apps[name]
        if self.store_delay:
            self._later(self.store_delay, landed)
        else:
            landed()
        return self.store_delay

    def _activate(self, entry: FakeApp) -> float:
        delay = self.activation_delay.get((entry.name, entry.version), self.store_delay)

        def landed():
            entry.state = "ACTIVE"
        if delay:
            entry.pending.append(self._later(delay, landed))
        else:
            landed()
        return delay

    # ---- HTTP -----------------------------------------------------------------------------------

    @staticmethod
    def _json(request, status: int, doc) -> bytes:
        request.setResponseCode(status)
        request.setHeader(b"content-type", b"application/json")
        return json.dumps(doc).encode()

    def _error(self, request, status: int, message: str) -> bytes:
        return self._json(request, status, {"code": status, "message": message})

    def _authorized(self, request) -> bool:
        self.requests.append((request.method.decode(), request.path.decode()))
        header = request.getHeader(b"authorization") or b""
        if header.startswith(b"Basic "):
            try:
                user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                user, password = None, None
            if user in self.users and self.users[user] == password:
                return True
        request.setResponseCode(401)
        request.setHeader(b"www-authenticate", b'Basic realm="karaf"')
        request.setHeader(b"content-type", b"text/html;charset=iso-8859-1")
        return False

    def _app_json(self, entry: FakeApp) -> dict:
        return {
            "name": entry.name, "id": entry.id, "version": entry.version, "category": "Traffic Steering",
            "description": f"{entry.name} for tests", "readme": f"{entry.name} for tests", "origin": "ONF",
            "url": "https://opencord.org", "featuresRepo": "", "state": entry.state,
            "features": [entry.name], "permissions": [], "requiredApps": list(entry.required),
        }

    def _not_found(self, request, name: str, id_message: bool = False) -> bytes:
        if name not in self.ids:
            message = f"Application ID is not found: {name}" if id_message else f"Application is not found:{name}"
        else:
            message = f"Application is not found: DefaultApplicationId{{id={self.ids[name]}, name={name}}}"
        return self._error(request, 404, message)

    @app.route(ROOT, methods=["GET"])
    def list_apps(self, request):
        if not self._authorized(request):
            return b"<html><body>Unauthorized</body></html>"
        return self._json(request, 200, {"applications": [self._app_json(e) for e in self.apps.values()]})

    @app.route(ROOT + "/<string:name>", methods=["GET"])
    def get_app(self, request, name):
        if not self._authorized(request):
            return b"<html><body>Unauthorized</body></html>"
        entry = self.apps.get(name)
        if entry is None:
            return self._not_found(request, name)
        return self._json(request, 200, self._app_json(entry))

    @app.route(ROOT + "/<string:name>/health", methods=["GET"])
    def health(self, request, name):
        if not self._authorized(request):
            return b"<html><body>Unauthorized</body></html>"
        entry = self.apps.get(name)
        if entry is None:
            return self._not_found(request, name, id_message=True)
        ready = entry.state == "ACTIVE" and (entry.name, entry.version) not in self.never_healthy
        return self._json(request, 200, {"message": "ready" if ready else "pending"})

    @app.route(ROOT + "/<string:name>/bits", methods=["GET"])
    def bits(self, request, name):
        if not self._authorized(request):
            return b"<html><body>Unauthorized</body></html>"
        entry = self.apps.get(name)
        if entry is None:
            return self._error(request, 404, f"Application ID is not found: {name}")
        request.setHeader(b"content-type", b"application/octet-stream")
        return entry.bits

    @app.route(ROOT + "/<string:name>", methods=["DELETE"])
    def delete(self, request, name):
        if not self._authorized(request):
            return b"<html><body>Unauthorized</body></html>"
        delay = self._uninstall(name)
        request.setResponseCode(204)
        # A no-op produces no store event: the helper waits the full timeout.
        return self._respond_after(self.operation_timeout if delay is None else delay, lambda: b"")

    @app.route(ROOT, methods=["POST"])
    def install(self, request):
        if not self._authorized(request):
            return b"<html><body>Unauthorized</body></html>"
        ctype = (request.getHeader(b"content-type") or b"").split(b";")[0].strip().lower()
        if ctype != b"application/octet-stream":
            request.setResponseCode(415)
            return b"Unsupported Media Type"
        data = request.content.read()
        self.uploads.append(data)
        try:
            name, version, required = parse_archive(data)
        except BadArchive:
            return self._error(request, 400, "org.onosproject.app.ApplicationException: Unable to save application")
        if name in self.apps:
            return self._error(request, 409, f"Application {name} already installed")
        missing = [r for r in required if r not in self.apps or self.apps[r].removing]
        if missing:
            self._register(name)  # the name is registered, the uploaded bits are purged
            return self._error(request, 400,
                               f"org.onosproject.app.ApplicationException: Missing dependencies for app {name}")
        entry = FakeApp(name, self._register(name), version, required, data)
        self.apps[name] = entry
        activate = (request.args.get(b"activate", [b"false"])[0]).decode().lower() == "true"
        if not activate:
            return self._json(request, 200, self._app_json(entry))
        delay = self._activate(entry)
        return self._respond_after(delay, lambda: self._json(request, 200, self._app_json(entry)))

    @app.route(ROOT + "/<string:name>/active", methods=["POST"])
    def activate(self, request, name):
        if not self._authorized(request):
            return b"<html><body>Unauthorized</body></html>"
        entry = self.apps.get(name)
        if entry is None:
            return self._error(request, 404, f"Application is not found: {name}")
        if entry.state == "ACTIVE":
            return self._respond_after(self.operation_timeout, lambda: self._json(request, 200, self._app_json(entry)))
        delay = self._activate(entry)
        return self._respond_after(delay, lambda: self._json(request, 200, self._app_json(entry)))

    @app.route(ROOT + "/<string:name>/active", methods=["DELETE"])
    def deactivate(self, request, name):
        if not self._authorized(request):
            return b"<html><body>Unauthorized</body></html>"
        entry = self.apps.get(name)
        if entry is not None:
            entry.state = "INSTALLED"
        request.setResponseCode(204)
        return b""
