"""Kubeconfig → API clients; Kubernetes/HTTP failures → one exception family; raw streaming exec;
retries of transient faults.

Every step library reaches a cluster (the twin or a live one) only through this module, so the
same code runs on both and failures read the same everywhere. Exec uses the raw websocket stream
(`_preload_content=False`) because the preloaded form of kubernetes-client ≥ 35 turns JSON stdout
into `str(dict)` (contract Finding #11).

The client's websocket code catches *everything* during an exec handshake, KeyboardInterrupt
included, and raises `ApiException(status=0)` instead; such an exception is turned back into the
interrupt here (`reraise_interrupt`), or Ctrl-C would read as an ordinary API error and the run
would carry on.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from stepgraph.dsl.eventually import StepRefused

if TYPE_CHECKING:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

T = TypeVar("T")


# The kubernetes client (with urllib3, requests and oauthlib) costs about 0.4 s to import: more
# than a lint or a run of scenarios that never reach a cluster takes in all. So it is imported
# on first use; the two exception types are looked up when a failure is being classified.
def _api_exception() -> type[ApiException]:
    from kubernetes.client.exceptions import ApiException

    return ApiException


def _transport_error() -> type[Exception]:
    from urllib3.exceptions import HTTPError

    return HTTPError


# -- errors -------------------------------------------------------------------------------------


class ClusterError(Exception):
    """Something the cluster (or the way to reach it) refused; the cause is always chained."""


class CredentialsError(ClusterError):
    """No usable kubeconfig or in-cluster service account."""


class ApiError(ClusterError):
    """The API server answered with an error Status."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


class NotFound(ApiError, StepRefused):
    """404: the object (or resource type) does not exist — most often one the scenario names
    (a pod name mistyped), so it is reported at the step as one block, not as a traceback."""


class Conflict(ApiError):
    """409: AlreadyExists or a stale resourceVersion."""


class Forbidden(ApiError):
    """403: RBAC said no (contract Finding #3)."""


class Invalid(ApiError):
    """422: the object failed validation."""


class ExecError(ClusterError):
    """An exec into a pod could not be run, or the command inside it failed."""


_BY_STATUS: dict[int, type[ApiError]] = {404: NotFound, 409: Conflict, 403: Forbidden, 422: Invalid}


_HANDSHAKE = re.compile(r"Handshake status (\d{3})")


def api_error(exc: ApiException) -> ApiError:
    """Translate the client's ApiException into our family, keeping the server's Status message.

    A refused exec websocket arrives as status 0 with "Handshake status 404 … -+-+- <Status JSON>"
    in the reason; the HTTP code and the Status are recovered from that text.
    """
    status, reason, body_text = exc.status or 0, str(exc.reason or ""), exc.body or ""
    if status == 0 and (m := _HANDSHAKE.search(reason)):
        status, body_text = int(m.group(1)), reason.rsplit("-+-+-", 1)[-1].strip()
    message = body_text
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        body = json.loads(body_text)
        reason = body.get("reason") or reason
        message = body.get("message") or message
    kind = _BY_STATUS.get(status, ApiError)
    err = kind(status, reason, str(message))
    err.__cause__ = exc
    return err


def reraise_interrupt(exc: BaseException) -> None:
    """Raise the KeyboardInterrupt (or SystemExit, or the cleanup's time bound — any exception
    that is not an Exception) the client wrapped into `exc`, if it did."""
    cause = exc.__context__ or exc.__cause__
    if isinstance(exc, _api_exception()) and isinstance(cause, BaseException) and not isinstance(cause, Exception):
        raise cause.with_traceback(None) from None


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """Run a block of client calls; re-raise any client failure as a ClusterError naming `what`."""
    try:
        yield
    except _api_exception() as exc:
        reraise_interrupt(exc)
        err = api_error(exc)
        err.args = (f"{what}: {err.args[0]}",)
        raise err from exc
    except (OSError, _transport_error()) as exc:  # connection refused, TLS, DNS, retries exhausted
        raise ClusterError(f"{what}: cannot reach the API server ({exc})") from exc


# -- retries ------------------------------------------------------------------------------------

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential back-off: `base_s`, doubling, at most `cap_s` per wait (a server's
    Retry-After is honoured up to `max_retry_after_s`), `attempts` tries in all."""

    attempts: int = 6
    base_s: float = 0.1
    cap_s: float = 5.0
    max_retry_after_s: float = 30.0

    def backoff(self, attempt: int) -> float:
        return min(self.cap_s, self.base_s * 2**attempt)


def _retry_after(headers: Any, attempt: int, policy: RetryPolicy) -> float:
    """The server's Retry-After (seconds) if it sent one, never less than our own back-off."""
    with contextlib.suppress(TypeError, ValueError, AttributeError):
        value = headers.get("Retry-After") if headers is not None else None
        if value is not None:
            return min(policy.max_retry_after_s, max(float(value), policy.backoff(attempt)))
    return policy.backoff(attempt)


def transient_delay(exc: BaseException, attempt: int, policy: RetryPolicy) -> float | None:
    """Seconds to wait before trying again after `exc`, or None when it is not transient."""
    if isinstance(exc, _api_exception()):
        status = exc.status or 0
        if status == 0 and (m := _HANDSHAKE.search(str(exc.reason or ""))):
            status = int(m.group(1))
        elif status == 0:  # the websocket could not be opened at all: reset, refused, timeout
            return policy.backoff(attempt)
        return _retry_after(exc.headers, attempt, policy) if status in RETRY_STATUS else None
    if isinstance(exc, (_transport_error(), ConnectionError, TimeoutError)):
        return policy.backoff(attempt)
    return None


def with_retries(call: Callable[[], T], sleep: Callable[[float], None], policy: RetryPolicy = RetryPolicy()) -> T:
    """`call()` until it does not meet a transient fault: 429 (after Retry-After), 5xx, resets,
    timeouts — raised, or returned as a response whose status says so — with bounded back-off
    on `sleep` (the target's clock). An interrupt the client wrapped is re-raised, never retried."""
    for attempt in range(policy.attempts):
        last = attempt == policy.attempts - 1
        try:
            answer = call()
        except (_api_exception(), _transport_error(), ConnectionError, TimeoutError) as exc:
            reraise_interrupt(exc)
            delay = transient_delay(exc, attempt, policy)
            if delay is None or last:
                raise
        else:
            status = getattr(answer, "status", 200)
            if status not in RETRY_STATUS or last:
                return answer
            delay = _retry_after(getattr(answer, "headers", None), attempt, policy)
            with contextlib.suppress(Exception):
                answer.read()  # type: ignore[attr-defined]  # hand the connection back to the pool
        sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


def retrying(call_api: Callable[..., Any], sleep: Callable[[float], None], policy: RetryPolicy = RetryPolicy()) -> Callable[..., Any]:
    """`ApiClient.call_api` that retries transient faults (see `with_retries`).

    Every request is retried, POSTs included: reads, lists, deletes (404 = done) and patches are
    idempotent, and every create the steps send carries the run's label, so a create that did
    land before its answer was lost comes back 409 and is recognised as our own (see
    k8s.apply_documents)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return with_retries(lambda: call_api(*args, **kwargs), sleep, policy)

    return call


# -- client factory -----------------------------------------------------------------------------


def api_client(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """An ApiClient from an explicit kubeconfig, else in-cluster config, else the default kubeconfig.

    Never touches the client's global default configuration, so the twin and a live cluster can
    be used side by side in one process.
    """
    return _one_retry_policy(_load_client(kubeconfig, context))


def _one_retry_policy(api: client.ApiClient) -> client.ApiClient:
    """Turn off urllib3's own retries (it sleeps wall-clock time on a 429/503 Retry-After and
    retries GETs up to three times on its own), so `with_retries` is the one policy, on the
    target's clock, for every request."""
    from kubernetes.client import rest

    api.configuration.retries = False
    api.rest_client = rest.RESTClientObject(api.configuration)
    return api


def _load_client(kubeconfig: str | None, context: str | None) -> client.ApiClient:
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    if kubeconfig:
        try:
            api = config.new_client_from_config(config_file=kubeconfig, context=context)
        except (ConfigException, OSError) as exc:
            raise CredentialsError(f"cannot load kubeconfig {kubeconfig}: {exc}") from exc
        if not _can_expire(kubeconfig, context):
            # The client re-applies the whole kubeconfig before every request (its hook for
            # credentials that expire: a refresh when they have) — for a token that cannot
            # expire, the same settings again, a few percent of a run's CPU.
            api.configuration.refresh_api_key_hook = None
        return api
    try:
        cfg = client.Configuration()
        config.load_incluster_config(client_configuration=cfg)
        return client.ApiClient(cfg)
    except ConfigException as in_cluster_exc:
        try:
            return config.new_client_from_config(context=context)
        except (ConfigException, OSError) as exc:
            raise CredentialsError(
                "no Kubernetes credentials: not running in a pod "
                f"({in_cluster_exc}) and no usable kubeconfig ({exc}) — set KUBECONFIG"
            ) from exc


def _can_expire(kubeconfig: str, context: str | None) -> bool:
    """Whether the user of the kubeconfig's context (its current one unless named) may hold
    credentials that expire: only an auth-provider or an exec plugin give them an expiry; a token,
    a token file, a client certificate or a password do not. True when that cannot be told."""
    from ruamel.yaml import YAML

    try:
        document = YAML(typ="safe", pure=True).load(Path(kubeconfig).read_text(encoding="utf-8"))
        name = context or document["current-context"]
        user_name = next(c["context"]["user"] for c in document["contexts"] if c["name"] == name)
        user = next(u.get("user") or {} for u in document["users"] if u["name"] == user_name)
    except Exception:  # not a kubeconfig the client could read either, or one that names no user
        return True
    return not isinstance(user, dict) or "auth-provider" in user or "exec" in user


# -- exec ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecResult:
    """What a command run inside a container printed, and how it ended."""

    stdout: str
    stderr: str
    exit_code: int

    def check(self, what: str) -> ExecResult:
        """Return self if the command succeeded, else raise ExecError with its stderr."""
        if self.exit_code != 0:
            tail = (self.stderr or self.stdout).strip().splitlines()[-5:]
            raise ExecError(f"{what}: exit code {self.exit_code}: " + " | ".join(tail))
        return self


def exit_code_from_status(status_text: str) -> int:
    """The exit code carried by the exec status channel (a metav1.Status JSON document)."""
    if not status_text.strip():
        raise ExecError("exec ended without a status on the error channel (connection lost?)")
    try:
        status = json.loads(status_text)
    except ValueError as exc:
        raise ExecError(f"exec status channel is not JSON: {status_text[:200]!r}") from exc
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            return int(cause.get("message", "1"))
    raise ExecError(f"exec failed: {status.get('message') or status_text[:200]}")


def exec_in_pod(
    core: client.CoreV1Api,
    pod: str,
    namespace: str,
    argv: Sequence[str],
    *,
    container: str | None = None,
    max_updates: int = 600,
    sleep: Callable[[float], None] = time.sleep,
) -> ExecResult:
    """Run argv in a pod over the raw websocket stream and collect stdout, stderr and exit code.

    `max_updates` bounds the loop (one update waits at most 1 s), so a hung command cannot hang
    the run; the bound is generous compared to every probe we ship (a metrics scrape times out
    after 5 s inside the pod).
    """
    from kubernetes.stream import stream

    kwargs: dict[str, Any] = {"container": container} if container else {}

    def open_stream() -> Any:
        return stream(
            core.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            command=list(argv),
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            _preload_content=False,
            **kwargs,
        )

    with translated(f"exec in pod {namespace}/{pod}"):
        ws = with_retries(open_stream, sleep)  # a refused or reset handshake ran nothing: safe to retry
    out: list[str] = []
    err: list[str] = []
    try:
        for _ in range(max_updates):
            if not ws.is_open():
                break
            ws.update(timeout=1)
            out.append(ws.read_stdout() or "")
            err.append(ws.read_stderr() or "")
        else:
            raise ExecError(f"exec in pod {namespace}/{pod}: no end after {max_updates} s")
        # Drain what arrived together with the close frame.
        out.append(ws.read_stdout() or "")
        err.append(ws.read_stderr() or "")
        status_text = ws.read_channel(3) or ""
    finally:
        ws.close()
        # When the server closed first, websocket-client's close() returns early (already
        # disconnected) and leaves the socket open; shutdown() closes it in every case.
        if ws.sock is not None:
            ws.sock.shutdown()
    return ExecResult("".join(out), "".join(err), exit_code_from_status(status_text))
