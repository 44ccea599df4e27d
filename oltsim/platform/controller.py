"""The controller's applications REST API (service document 4.3 and 5; onos-applications-api.md), as a treq client.

`parse_target` turns `http(s)://user:password@host:8181[/root]` into a base URL without credentials plus HTTP
Basic credentials: treq does not accept userinfo in the URL (Twisted's URI parser rejects `user:pass@host` as a
hostname), so it is split off here and sent as an Authorization header. HTTPS is verified against the platform
trust store or a given CA bundle, with service-identity checking the host name or IP address.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit, urlunsplit

DEFAULT_ROOT = "/onos/v1"
DEFAULT_PORT = 8181


class ControllerError(Exception):
    """The controller answered something the procedure does not accept, or could not be asked."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message


class AuthError(ControllerError):
    """The controller refused the credentials (401): nothing else can work, so polls do not retry it."""


class Unreachable(ControllerError):
    """No answer: connection refused or reset, TLS failure, or the request timed out."""


class Conflict(ControllerError):
    """409 on install: an app with that name is still installed."""


class Rejected(ControllerError):
    """400 on install: a bad archive or a missing dependency; the message is the controller's."""


@dataclass(frozen=True)
class Target:
    """Where the controller's applications API is and how to authenticate to it."""

    base_url: str                 # scheme://host:port/root, no credentials, no trailing slash
    user: str | None = None
    password: str | None = None
    ca_file: str | None = None

    @property
    def auth(self) -> tuple[str, str] | None:
        """(user, password) for HTTP Basic, or None."""
        if self.user is None:
            return None
        return (self.user, self.password or "")

    @property
    def https(self) -> bool:
        """True if the API is reached over TLS."""
        return self.base_url.startswith("https://")

    def display(self) -> str:
        """The URL for people and logs: the user is shown, the password never."""
        if self.user is None:
            return self.base_url
        scheme, rest = self.base_url.split("://", 1)
        return f"{scheme}://{quote(self.user, safe='')}:***@{rest}"

    def url(self, *segments: str, query: str = "") -> str:
        """The URL of an API path under the root, each segment percent-encoded (app names contain dots only)."""
        path = "/".join(quote(s, safe="") for s in segments)
        return f"{self.base_url}/{path}" + (f"?{query}" if query else "")


def parse_target(url: str, user: str | None = None, password: str | None = None,
                 ca_file: str | None = None) -> Target:
    """Split credentials out of a controller URL; `user`/`password` given as options win over the URL's.

    `karaf:karaf@127.0.0.1:8181` (no scheme) means http. An empty path means the default root `/onos/v1`; any
    other path is taken as the API root. Percent-encoded characters in the userinfo are decoded.
    """
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"controller URL must be http:// or https://, not {parts.scheme}://")
    userinfo, _, hostport = parts.netloc.rpartition("@")
    if not hostport or parts.hostname is None:
        raise ValueError(f"controller URL has no host: {url!r}")
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError as exc:
        raise ValueError(f"controller URL has a bad port: {url!r}") from exc
    if parts.query or parts.fragment:
        raise ValueError("controller URL must not have a query or fragment")
    url_user = url_password = None
    if userinfo:
        raw_user, sep, raw_password = userinfo.partition(":")
        if not raw_user:
            raise ValueError("controller URL has credentials without a user name")
        url_user = unquote(raw_user)
        url_password = unquote(raw_password) if sep else None
    root = parts.path.rstrip("/") or DEFAULT_ROOT
    base = urlunsplit((parts.scheme, hostport, root, "", ""))
    final_user = user if user is not None else url_user
    final_password = password if password is not None else url_password
    if final_user is None and final_password is not None:
        raise ValueError("a password was given without a user")
    return Target(base, final_user, final_password, ca_file)


def read_ca_bundle(path: str) -> list[bytes]:
    """The PEM certificates in a CA file, each as bytes; a file without one is an error."""
    with open(path, "rb") as f:
        data = f.read()
    certs = re.findall(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", data, re.S)
    if not certs:
        raise ValueError(f"{path}: no PEM certificate found")
    return certs


def make_http_client(reactor, target: Target):
    """A treq HTTPClient for the target: non-persistent connections, TLS verified (custom CA if given)."""
    import service_identity  # noqa: F401 - without it Twisted cannot check host names properly; fail loudly here
    from treq.client import HTTPClient
    from twisted.internet import ssl
    from twisted.web.client import Agent, BrowserLikePolicyForHTTPS, HTTPConnectionPool

    if target.ca_file:
        trust = ssl.trustRootFromCertificates(
            [ssl.Certificate.loadPEM(pem) for pem in read_ca_bundle(target.ca_file)])
    else:
        trust = ssl.platformTrust()
    pool = HTTPConnectionPool(reactor, persistent=False)
    agent = Agent(reactor, contextFactory=BrowserLikePolicyForHTTPS(trustRoot=trust), pool=pool)
    return HTTPClient(agent)


def _describe(failure) -> str:
    """One line for a failed request: the inner reasons of treq/Agent's wrapper failures, TLS errors by name."""
    from twisted.web.client import ResponseFailed, ResponseNeverReceived
    if failure.check(ResponseFailed, ResponseNeverReceived):
        return "; ".join(_describe(inner) for inner in failure.value.reasons) or "connection lost"
    text = failure.getErrorMessage() or failure.type.__name__
    if failure.type.__module__.startswith("OpenSSL"):
        if "certificate verify failed" in text:
            return "TLS: the controller's certificate is not trusted (give its CA with --ca) or does not match the host"
        return f"TLS error: {text}"
    if failure.type.__module__.startswith("service_identity"):
        return f"TLS: the controller's certificate is not for this host ({text})"
    return text


def _message(status: int, body: bytes) -> str:
    """The controller's error message: the `message` of its JSON error body, else the start of the body."""
    try:
        doc = json.loads(body)
        if isinstance(doc, dict) and "message" in doc:
            return str(doc["message"])
    except ValueError:
        pass
    text = body.decode("utf-8", "replace").strip()
    return text[:200] if text else f"HTTP {status}"


class ApplicationsClient:
    """The calls of the applications API the update uses; every method returns a Deferred.

    Statuses are interpreted as the semantics file says: GET of an absent app is None, not an error; DELETE
    expects 204; install expects 200 and turns 409 into Conflict and 400 into Rejected; 401 is AuthError
    everywhere; failures to get any answer are Unreachable.
    """

    def __init__(self, http, target: Target, reactor, timeout: float = 10.0):
        self._http = http
        self._target = target
        self._reactor = reactor
        self._timeout = timeout

    def _request(self, method: str, url: str, **kwargs):
        import treq
        from twisted.internet.defer import CancelledError

        def failed(failure):
            if failure.check(CancelledError):
                raise Unreachable(f"{method} {url}: no answer within {self._timeout:g}s")
            raise Unreachable(f"{method} {url}: {_describe(failure)}")

        def read(response):
            d = treq.content(response)
            d.addCallback(lambda body: (response.code, response.headers, body))
            return d

        d = self._http.request(method, url, auth=self._target.auth, timeout=self._timeout,
                               reactor=self._reactor, **kwargs)
        d.addCallback(read)
        d.addErrback(failed)
        d.addCallback(self._check_auth, method, url)
        return d

    @staticmethod
    def _check_auth(result, method, url):
        status, _headers, _body = result
        if status == 401:
            raise AuthError(f"{method} {url}: the controller refused the credentials (401); give them in the URL "
                            f"(http://user:password@host:8181) or with --user/--password", 401)
        if status == 403:
            raise AuthError(f"{method} {url}: the user may not do this (403)", 403)
        return result

    @staticmethod
    def _json(method, url, status, body):
        try:
            return json.loads(body)
        except ValueError:
            raise ControllerError(f"{method} {url}: {status} with a body that is not JSON", status) from None

    def _unexpected(self, method, url, status, body):
        return ControllerError(f"{method} {url}: unexpected {status}: {_message(status, body)}", status)

    def get_app(self, name: str):
        """The app's JSON (name, id, version, state, requiredApps...), or None if it is not installed (404)."""
        url = self._target.url("applications", name)

        def got(result):
            status, _, body = result
            if status == 404:
                return None
            if status != 200:
                raise self._unexpected("GET", url, status, body)
            return self._json("GET", url, status, body)
        return self._request("GET", url).addCallback(got)

    def list_apps(self):
        """Every installed app's JSON, active or not."""
        url = self._target.url("applications")

        def got(result):
            status, _, body = result
            if status != 200:
                raise self._unexpected("GET", url, status, body)
            doc = self._json("GET", url, status, body)
            return list(doc.get("applications", []))
        return self._request("GET", url).addCallback(got)

    def health(self, name: str):
        """`ready` or `pending` from /health, or None if the app is not installed (404)."""
        url = self._target.url("applications", name, "health")

        def got(result):
            status, _, body = result
            if status == 404:
                return None
            if status != 200:
                raise self._unexpected("GET", url, status, body)
            return str(self._json("GET", url, status, body).get("message", ""))
        return self._request("GET", url).addCallback(got)

    def bits(self, name: str):
        """The installed archive (.oar, .jar or app.xml) as bytes."""
        url = self._target.url("applications", name, "bits")

        def got(result):
            status, _, body = result
            if status != 200:
                raise self._unexpected("GET", url, status, body)
            return body
        return self._request("GET", url).addCallback(got)

    def delete(self, name: str):
        """Uninstall the app (the controller deactivates it first and cascades to apps requiring it); 204."""
        url = self._target.url("applications", name)

        def got(result):
            status, _, body = result
            if status != 204:
                raise self._unexpected("DELETE", url, status, body)
        return self._request("DELETE", url).addCallback(got)

    def install(self, archive: bytes, activate: bool = True):
        """Upload an archive as application/octet-stream; the installed app's JSON on 200."""
        url = self._target.url("applications", query="activate=true" if activate else "")

        def got(result):
            status, _, body = result
            if status == 200:
                return self._json("POST", url, status, body)
            if status == 409:
                raise Conflict(f"still installed (409): {_message(status, body)}", status)
            if status == 400:
                raise Rejected(f"rejected (400): {_message(status, body)}", status)
            raise self._unexpected("POST", url, status, body)
        return self._request("POST", url, data=archive,
                             headers={"Content-Type": ["application/octet-stream"]}).addCallback(got)

    def activate(self, name: str):
        """Activate an installed app (POST /applications/{name}/active); its JSON on 200."""
        url = self._target.url("applications", name, "active")

        def got(result):
            status, _, body = result
            if status != 200:
                raise self._unexpected("POST", url, status, body)
            return self._json("POST", url, status, body)
        return self._request("POST", url).addCallback(got)
