"""HTTP Digest access authentication, server side (RFC 7616, and RFC 2617 which it updates): algorithm MD5 with
``qop=auth``, as a web power switch and the clients that drive one (python-requests' HTTPDigestAuth, curl
--digest, a browser) speak it.

Pure: no I/O and no reactor. The nonces come from ``random_bytes`` (os.urandom), their age from ``clock`` (an
IReactorTime: ``seconds()``). A server keeps one :class:`DigestAuth`, asks it for the challenge of a 401 and has it
check every ``Authorization`` header it receives.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["DigestAuth", "Verdict", "parse_auth_params", "digest_response", "md5_hex"]

#: how long an issued nonce is accepted (seconds): past it a client is told its nonce is stale and retries
NONCE_LIFETIME = 300.0
#: issued nonces remembered at most; the oldest is forgotten first (its client then gets a fresh one, stale=true)
MAX_NONCES = 1024
#: the longest Authorization header read; a longer one is refused unread
MAX_HEADER = 4096

# auth-param = token "=" ( token / quoted-string ), RFC 7235 section 2.1
_PARAM = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)\s*(?:,|$)')


def md5_hex(text: str) -> str:
    """The MD5 of ``text`` (UTF-8) as 32 lower-case hex digits."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def digest_response(*, username: str, realm: str, password: str, method: str, uri: str, nonce: str,
                    nc: str | None = None, cnonce: str | None = None, qop: str | None = None) -> str:
    """The ``response`` a client computes (RFC 7616 section 3.4.1, MD5): with ``qop`` (auth) it covers nc and
    cnonce, without it (RFC 2069 clients) only the nonce."""
    ha1 = md5_hex(f"{username}:{realm}:{password}")
    ha2 = md5_hex(f"{method}:{uri}")
    if qop:
        return md5_hex(f"{ha1}:{nonce}:{nc}:{cnonce}:{qop}:{ha2}")
    return md5_hex(f"{ha1}:{nonce}:{ha2}")


def parse_auth_params(text: str) -> dict[str, str] | None:
    """The auth-params of a credentials or challenge header after its scheme (``realm="x", nc=00000001``), names
    lower-cased and quoted strings unquoted; None when the text is not a list of such params."""
    params: dict[str, str] = {}
    position, text = 0, text.strip()
    while position < len(text):
        match = _PARAM.match(text, position)
        if match is None or match.end() == position:
            return None
        name, value = match.group(1).lower(), match.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        if name in params:
            return None  # a repeated parameter is ambiguous: refused rather than guessed
        params[name] = value
        position = match.end()
    return params


@dataclass(frozen=True)
class Verdict:
    """What :meth:`DigestAuth.check` found: ``ok`` (the credentials are right), and when not, ``stale`` (they were
    right for a nonce no longer accepted: challenge again with stale=true) and ``reason`` (for the log, never for
    the client: it names no secret)."""

    ok: bool
    stale: bool = False
    reason: str = ""
    username: str = ""


class DigestAuth:
    """One realm, one user and password; issues nonces and checks Digest (or, when ``basic`` is asked of
    :meth:`check_basic`, Basic) credentials against them.

    A nonce is accepted for ``lifetime`` seconds of ``clock``, each with a nonce count (nc) that must grow from one
    request to the next (a replayed request is refused); at most ``max_nonces`` are remembered."""

    def __init__(self, realm: str, username: str, password: str, *, clock, random_bytes=os.urandom,
                 lifetime: float = NONCE_LIFETIME, max_nonces: int = MAX_NONCES):
        self.realm = realm
        self.username = username
        self._password = password
        self.clock = clock
        self.random_bytes = random_bytes
        self.lifetime = lifetime
        self.max_nonces = max_nonces
        self.opaque = random_bytes(16).hex()
        #: nonce -> [issued at, highest nc seen]
        self._nonces: OrderedDict[str, list] = OrderedDict()

    def __repr__(self) -> str:
        return f"DigestAuth(realm={self.realm!r}, username={self.username!r})"  # never the password

    def challenge(self, stale: bool = False) -> str:
        """The value of a 401's ``WWW-Authenticate`` header, with a new nonce."""
        nonce = self.random_bytes(16).hex()
        self._nonces[nonce] = [self.clock.seconds(), 0]
        while len(self._nonces) > self.max_nonces:
            self._nonces.popitem(last=False)
        return (f'Digest realm="{_quote(self.realm)}", qop="auth", algorithm=MD5, nonce="{nonce}", '
                f'opaque="{self.opaque}"' + (", stale=true" if stale else ""))

    def check(self, method: str, uri: str, header: str | None) -> Verdict:
        """Whether ``header`` (the request's ``Authorization`` value, or None) authenticates a request of
        ``method`` for ``uri`` (the request-target as sent: path and query). A right answer to a known nonce moves
        its nonce count on; nothing else changes."""
        if not header:
            return Verdict(False, reason="no credentials")
        if len(header) > MAX_HEADER:
            return Verdict(False, reason="credentials too long")
        scheme, _, rest = header.strip().partition(" ")
        if scheme.lower() != "digest":
            return Verdict(False, reason=f"scheme {scheme[:16]!r} is not Digest")
        params = parse_auth_params(rest)
        if params is None:
            return Verdict(False, reason="malformed Digest credentials")
        missing = [name for name in ("username", "realm", "nonce", "uri", "response") if name not in params]
        if missing:
            return Verdict(False, reason=f"Digest credentials without {', '.join(missing)}")
        if params.get("algorithm", "MD5").upper() != "MD5":
            return Verdict(False, reason="only algorithm MD5 is accepted")
        qop = params.get("qop")
        if qop is not None and qop != "auth":
            return Verdict(False, reason="only qop auth is accepted")
        nc_value = None
        if qop is not None:
            if "cnonce" not in params or not re.fullmatch(r"[0-9a-fA-F]{8}", params.get("nc", "")):
                return Verdict(False, reason="qop auth without a cnonce or an 8-digit nc")
            nc_value = int(params["nc"], 16)
        if params["realm"] != self.realm:
            return Verdict(False, reason="another realm")
        if params["uri"] != uri:
            return Verdict(False, reason="credentials for another uri")
        expected = digest_response(username=self.username, realm=self.realm, password=self._password,
                                   method=method, uri=params["uri"], nonce=params["nonce"], nc=params.get("nc"),
                                   cnonce=params.get("cnonce"), qop=qop)
        right = hmac.compare_digest(params["username"].encode("utf-8"), self.username.encode("utf-8"))
        right = hmac.compare_digest(params["response"].lower().encode("utf-8"), expected.encode("ascii")) and right
        if not right:
            return Verdict(False, reason="wrong user name or password", username=params["username"])
        entry = self._nonces.get(params["nonce"])
        if entry is None or self.clock.seconds() - entry[0] > self.lifetime:
            self._nonces.pop(params["nonce"], None)
            return Verdict(False, stale=True, reason="nonce unknown or expired", username=params["username"])
        if nc_value is not None:
            if nc_value <= entry[1]:
                return Verdict(False, reason="nonce count replayed", username=params["username"])
            entry[1] = nc_value
        return Verdict(True, username=params["username"])

    def check_basic(self, header: str | None) -> Verdict:
        """Whether ``header`` is Basic credentials of this user and password (what a real Expert Power Control
        takes)."""
        if not header or len(header) > MAX_HEADER:
            return Verdict(False, reason="no credentials")
        scheme, _, rest = header.strip().partition(" ")
        if scheme.lower() != "basic":
            return Verdict(False, reason="not Basic")
        try:
            user, colon, password = base64.b64decode(rest.strip(), validate=True).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            return Verdict(False, reason="malformed Basic credentials")
        right = hmac.compare_digest(user.encode("utf-8"), self.username.encode("utf-8"))
        right = hmac.compare_digest(password.encode("utf-8"), self._password.encode("utf-8")) and right and colon
        return Verdict(bool(right), reason="" if right else "wrong user name or password", username=user)


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
