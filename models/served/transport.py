"""The HTTP side of a served model: where it is (``Endpoint``: the base URL, the query every request keeps, the
credentials and the public form shown everywhere) and how a request is sent (``Transport``: one httpx connection
pool, retries with exponential backoff and full jitter, Retry-After honoured, and a deadline per request).

``transport=`` takes any ``httpx.BaseTransport`` (``httpx.MockTransport`` in the tests): everything above it is
the same code a real server meets.
"""
from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ...core.choices import public_url
from ...core.errors import InputError, ModelError, first_line

log = logging.getLogger(__name__)

BACKOFF_BASE_S, BACKOFF_CAP_S = 0.5, 30.0
MAX_RETRY_AFTER_S = 120.0  # a Retry-After beyond this is not waited for: the request fails
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
# How servers say that one input is longer than the model (or its batch) takes: vLLM's "maximum context length",
# llama.cpp's "larger than the max context size" (400) and "input (N tokens) is too large to process. increase the
# physical batch size" (500), TEI's "must have less than N tokens".
_TOO_LONG = re.compile(r"context length|context size|context window|too long|too large to process|max_model_len|"
                       r"maximum.*tokens|tokens.*(larger|longer|exceed|more) than|less than \d+ tokens|"
                       r"input.*(larger|longer)", re.IGNORECASE)
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MASK = "***"
MIN_SECRET = 4
# a credential a server echoes after its scheme (an Authorization header repeated in an error page)
_CREDENTIAL = re.compile(r"(\b(?:Bearer|Basic|Token|api[_-]?key)\b[\s:=]+)[^\s,;\"'&]+", re.IGNORECASE)
# How much of an answer is read, decoded (after any gzip or deflate): what the request implies, generously, and no
# more, so that a deployment cannot take the runner that gates it out of memory (a 4 MB gzip answer that inflated to
# gigabytes did). /embeddings: rows x dimension x the bytes a number takes at most as JSON text
# ("-1.2345678901234567e-05, "; base64 takes 5.4) on top of the floor; before the first answer says the dimension,
# MAX_DIMENSION stands for it. Every other route (/models, /tokenize, /info): the floor.
ANSWER_FLOOR_BYTES = 8 * 2**20
ANSWER_BYTES_PER_NUMBER = 32
MAX_DIMENSION = 65_536


def answer_limit(rows: int, dimension: int | None = None) -> int:
    """The most bytes (decoded) an answer of ``rows`` vectors of ``dimension`` numbers is read to."""
    return ANSWER_FLOOR_BYTES + rows * (dimension or MAX_DIMENSION) * ANSWER_BYTES_PER_NUMBER


def too_long(message: str) -> bool:
    """Whether a server's error message says that an input is too long for it."""
    return bool(_TOO_LONG.search(message))


class Refused(Exception):
    """An HTTP 4xx the caller may cure (a smaller batch, floats instead of base64), with the server's message."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message = status, message


@dataclass(frozen=True)
class Endpoint:
    """A base URL as OpenAI's client takes it, taken apart: ``base`` (scheme, host, port, path) where the
    routes are appended, ``params`` (its query, kept on every request), ``auth`` (user and password from the
    URL, sent as Basic auth), ``bearer`` (the API key from the environment) and ``public`` (what is shown and
    written: no credentials, no query)."""
    base: str
    params: tuple[tuple[str, str], ...] = ()
    auth: tuple[str, str] | None = field(default=None, repr=False)
    bearer: str | None = field(default=None, repr=False)
    key_env: str = ""

    @property
    def public(self) -> str:
        return self.base

    @classmethod
    def parse(cls, url: str, api_key_env: str) -> Endpoint:
        parts = urlsplit(url.strip())
        try:
            host = parts.hostname
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            host = None
        if parts.scheme not in ("http", "https") or not host:
            raise InputError(f"{public_url(url)!r} is not an http(s) URL with a host.",
                             "pass a base URL as OpenAI's client takes it, e.g. http://127.0.0.1:8080/v1#my-model.")
        base = public_url(url)  # what requests go to is what is shown: no credentials, no query
        auth = (unquote(parts.username or ""), unquote(parts.password or "")) if parts.username else None
        bearer = os.environ.get(api_key_env) or None
        if auth and bearer:
            raise InputError(f"Credentials for {base} both in the URL (user:password@) and in {api_key_env}.",
                             f"pass one: unset {api_key_env} for Basic auth, or drop user:password@ for the key.")
        return cls(base, tuple(parse_qsl(parts.query, keep_blank_values=True)), auth, bearer, api_key_env)

    @property
    def auth_kind(self) -> str:
        """Which credentials are sent, in words (never the credentials)."""
        if self.auth:
            return "Basic auth from the URL"
        if self.bearer:
            return f"a bearer key from {self.key_env}"
        return "none"

    def secrets(self) -> list[str]:
        """Every credential this endpoint sends: the bearer key, the URL's user and password, each value of its
        query (a gateway's key may travel as ?api_key=, ?code=, ?sig=...); the longest first. Values under
        MIN_SECRET characters are not taken for secrets (masking them would garble a server's numbers)."""
        values = [self.bearer or "", *(self.auth or ()), *(value for _, value in self.params)]
        return sorted({v for v in values if len(v) >= MIN_SECRET}, key=len, reverse=True)

    def mask(self, text: str) -> str:
        """``text`` from a server (an error message, a header it echoed) as it may be shown or written: each of
        this endpoint's secrets, raw or URL-encoded, and whatever follows a 'Bearer ' or 'Basic ', masked."""
        from urllib.parse import quote, quote_plus

        for secret in self.secrets():
            for form in dict.fromkeys((secret, quote(secret, safe=""), quote_plus(secret))):
                text = text.replace(form, MASK)
        return _CREDENTIAL.sub(lambda m: m.group(1) + MASK, text)

    def masked(self, value: Any) -> Any:
        """What a server sent that fasteval keeps or shows (a /models entry, /info, an answer's ``model``), every
        string in it (keys included) masked as ``mask`` masks text."""
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask(str(k)): self.masked(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.masked(v) for v in value]
        return value

    def public_model_id(self, model_id: str) -> str:
        """A served model's id as it may name things (folders, files, result rows, the terminal): masked, cut
        before any query (``?api_key=...``) or fragment, and every run of characters other than letters, digits
        and ``. _ - + : /`` made one ``_`` (a gateway that names the model after the request echoes whatever it
        was sent). The id itself is sent to the server as it is, and written nowhere."""
        shown = re.split(r"[?#]", self.mask(model_id), maxsplit=1)[0]
        shown = re.sub(r"[^0-9A-Za-z._+:/-]+", "_", shown).strip("_/")
        return shown or "served-model"

    def roots(self) -> list[str]:
        """Where a server's own routes (/info, /tokenize, /props) may be: the base, and its root when it ends
        in /v1."""
        return ([self.base[: -len("/v1")]] if self.base.endswith("/v1") else []) + [self.base]


class Transport:
    """JSON requests to one endpoint: retried on 408/425/429/5xx, timeouts and dropped connections; each
    request, retries aside, must be answered whole within ``timeout`` seconds (a server that trickles its
    answer is cut off at the deadline, not after a read timeout per chunk)."""

    def __init__(self, endpoint: Endpoint, *, timeout: float, retries: int, concurrency: int, usage,
                 transport: Any = None):
        import httpx

        self.endpoint, self.timeout, self.retries, self.usage = endpoint, float(timeout), int(retries), usage
        # at most ``concurrency`` requests in flight, however many threads send (groups in flight, each split into
        # batches): one waits here for its turn, never in httpx's pool, whose wait would count against a timeout
        self._slots = threading.BoundedSemaphore(concurrency)
        headers = {"Authorization": f"Bearer {endpoint.bearer}"} if endpoint.bearer else {}
        self._client = httpx.Client(headers=headers, auth=endpoint.auth, timeout=httpx.Timeout(timeout),
                                    params=list(endpoint.params), follow_redirects=False, transport=transport,
                                    limits=httpx.Limits(max_connections=concurrency,
                                                        max_keepalive_connections=concurrency))

    def close(self) -> None:
        self._client.close()

    def request(self, method: str, path: str, payload: Any = None, base: str | None = None, retry: bool = True,
                first_contact: bool = False, limit: int = ANSWER_FLOOR_BYTES) -> Any:
        """The JSON answer of ``method base+path``, read to at most ``limit`` bytes decoded (``answer_limit``).
        ``Refused`` for a 4xx the caller may cure; ModelError for everything else, naming the problem and the fix
        (the public URL only, never a credential)."""
        import httpx

        url = (base or self.endpoint.base) + path
        shown = public_url(url)
        tries = self.retries + 1 if retry else 1
        for attempt in range(tries):
            wait = None
            try:
                self.usage.add(requests=1)
                status, headers, body = self._send(method, url, payload, limit)
            except _TooLarge:
                raise ModelError(f"{shown} answered more than {limit / 2**20:.1f} MiB (decoded), more than the request "
                                 "can take: the answer was refused, not read whole.",
                                 "check the server (a compressed answer that inflates without end, or one that "
                                 "does not end); fasteval reads an answer to the size its request implies.") from None
            except httpx.ConnectError as err:
                if first_contact and attempt == 0:
                    raise ModelError(f"Nothing answers at {shown} ({self.endpoint.mask(_safe(err))}).",
                                     "start the server, or check the host, port and scheme of its URL.") from None
                reason = f"could not connect ({self.endpoint.mask(_safe(err))})"
            except (httpx.TimeoutException, _Deadline):
                reason = f"no whole answer within {self.timeout:g} s"
            except httpx.TransportError as err:
                reason = f"the connection dropped ({type(err).__name__})"
            else:
                if status < 300:
                    return _json(body, shown, status)
                _raise_for(status, headers, body, shown, self.endpoint)
                reason, wait = f"HTTP {status}", _retry_after(headers)
            if attempt == tries - 1:
                raise ModelError(f"{shown} did not answer after {attempt + 1} tries (last: {reason}).",
                                 "check that the server is up and not overloaded, or raise --retries or "
                                 "--request-timeout.")
            if wait is not None and wait > MAX_RETRY_AFTER_S:
                raise ModelError(f"{shown} asks to retry after {wait:.0f} s (over {MAX_RETRY_AFTER_S:.0f} s).",
                                 "try again later, or lower --concurrency to stay within the rate limit.")
            delay = wait if wait is not None else random.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** attempt))
            self.usage.add(retries=1)
            log.info("%s: %s; retrying in %.1f s (%d of %d)", shown, reason, delay, attempt + 1, self.retries)
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _send(self, method: str, url: str, payload: Any, limit: int) -> tuple[int, Any, bytes]:
        """(status, headers, body) of one request, read whole before its deadline and within ``limit`` bytes."""
        with self._slots:
            deadline = time.monotonic() + self.timeout
            return self._stream(method, url, payload, deadline, limit)

    def _stream(self, method: str, url: str, payload: Any, deadline: float, limit: int) -> tuple[int, Any, bytes]:
        chunks: list[bytes] = []
        size = 0
        with self._client.stream(method, url, json=payload) as response:
            for chunk in response.iter_bytes():  # decoded: gzip and deflate are counted as they inflate
                size += len(chunk)
                if size > limit:
                    raise _TooLarge()
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise _Deadline()
            return response.status_code, response.headers, b"".join(chunks)


class _Deadline(Exception):
    """A request not answered whole within its deadline."""


class _TooLarge(Exception):
    """An answer larger, decoded, than its request implies."""


def _safe(err: Exception) -> str:
    """An exception's first line with any URL in it reduced to its public form."""
    return re.sub(r"https?://\S+", lambda m: public_url(m.group(0)), first_line(err, 100))


def _json(body: bytes, shown: str, status: int) -> Any:
    import json

    try:
        return json.loads(body)
    except ValueError:
        raise ModelError(f"{shown} answered HTTP {status} with a body that is not JSON.",
                         "check that the URL is the API's base URL (it usually ends in /v1).") from None


def _raise_for(status: int, headers, body: bytes, shown: str, endpoint: Endpoint) -> None:
    """Raise for a status that is neither a success nor retried (a retried one returns)."""
    if status in REDIRECT_STATUSES:
        where = urlsplit(headers.get("location", "")).hostname or "a location it does not name"
        raise ModelError(f"{shown} redirects (HTTP {status}) to {where}; fasteval does not follow redirects (a "
                         "credential must not travel to another host).",
                         "pass the URL it redirects to instead.")
    if status in (401, 403):
        sent = endpoint.auth_kind != "none"
        raise ModelError(f"{shown} refused the request (HTTP {status}; credentials sent: {endpoint.auth_kind}).",
                         f"set {endpoint.key_env} to a valid API key" + (f" (the {endpoint.auth_kind} was refused)."
                                                                         if sent else "."))
    if status == 404:
        raise ModelError(f"{shown} answered 404 (not found).",
                         "check the base URL (OpenAI-compatible servers usually serve under /v1) and the model "
                         "name after #.")
    message = endpoint.mask(_error_text(body))
    if status not in RETRY_STATUSES or too_long(message):  # an input too long is refused, not a passing fault
        raise Refused(status, message)


def _retry_after(headers) -> float | None:
    """Retry-After in seconds (a number or an HTTP date), or None."""
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time()) if when is not None else None


def _error_text(body: bytes) -> str:
    """The server's error message, short (OpenAI's {"error": {"message"}}, TEI's {"error"}, FastAPI's "detail")."""
    import json

    try:
        data = json.loads(body)
    except ValueError:
        return body[:160].decode("utf-8", "replace")
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:200]
    return str(data)[:200]
