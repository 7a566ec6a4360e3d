"""Bearer tokens → users, and RBAC → allowed or 403, for service-account tokens.

The twin signs service-account tokens itself (JWTs, HS256 with a key from the twin's seed, the
claims a real `TokenRequest` carries: `sub` = `system:serviceaccount:<ns>:<name>` and the
`kubernetes.io` block naming the namespace, service account and pod). A request bearing one is
that service account — groups `system:serviceaccounts`, `system:serviceaccounts:<ns>`,
`system:authenticated` — and is authorised by RBAC: the Roles and ClusterRoles bound to it
(RoleBindings grant within their namespace, ClusterRoleBindings everywhere). Discovery, health
and `selfsubjectaccessreviews` are open to every authenticated user, as the bootstrap roles
`system:discovery` and `system:basic-user` make them on a real cluster. Any other credential
(the kubeconfig's token, none at all) is the cluster admin, so the test side keeps full rights.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

from .errors import ApiError

ISSUER = "https://kubernetes.default.svc.cluster.local"
TOKEN_SECONDS = 3607  # what the kubelet's projected token asks for


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = field(default=())
    admin: bool = False

    @property
    def service_account(self) -> tuple[str, str] | None:
        parts = self.name.split(":")
        return (parts[2], parts[3]) if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"] else None


ADMIN = User("twin-admin", ("system:masters", "system:authenticated"), admin=True)


@dataclass(frozen=True)
class Request:
    """What RBAC decides on (a resource request, or a non-resource path)."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str | None = None
    name: str | None = None
    path: str | None = None  # non-resource requests only


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Auth:
    def __init__(self, store: Any, key: bytes) -> None:
        self.store, self._key = store, key

    # -- tokens ---------------------------------------------------------------------------
    def mint(self, namespace: str, service_account: str, *, pod: dict | None = None,
             seconds: int = TOKEN_SECONDS) -> str:
        """A signed token for the service account (bound to `pod` when given)."""
        sa = self.store.get("serviceaccounts", namespace, service_account)
        now = int(self.store.clock.wall())
        claims: dict = {"aud": [ISSUER], "exp": now + seconds, "iat": now, "iss": ISSUER, "nbf": now,
                        "sub": f"system:serviceaccount:{namespace}:{service_account}",
                        "kubernetes.io": {"namespace": namespace,
                                          "serviceaccount": {"name": service_account, "uid": sa["metadata"]["uid"]}}}
        if pod is not None:
            claims["kubernetes.io"]["pod"] = {"name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + _b64(json.dumps(claims).encode())
        return head + "." + _b64(hmac.new(self._key, head.encode(), hashlib.sha256).digest())

    def token_for_pod(self, pod: dict) -> str:
        """The token the kubelet would project into `pod` for its service account."""
        sa = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        return self.mint(pod["metadata"]["namespace"], sa, pod=pod)

    def authenticate(self, authorization: str | None) -> User:
        scheme, _, token = (authorization or "").strip().partition(" ")
        # The scheme is case-insensitive (RFC 7235), as the real server reads it: the official
        # client's in-cluster config sends "bearer <token>".
        token = token.strip() if scheme.lower() == "bearer" else ""
        parts = token.split(".")
        if len(parts) != 3:
            return ADMIN
        head = parts[0] + "." + parts[1]
        if not hmac.compare_digest(_b64(hmac.new(self._key, head.encode(), hashlib.sha256).digest()), parts[2]):
            return ADMIN  # not one of ours: a kubeconfig's token
        try:
            claims = json.loads(_unb64(parts[1]))
        except ValueError:
            raise ApiError(401, "Unauthorized", "Unauthorized") from None
        if claims.get("exp", 0) < self.store.clock.wall() or not self._still_valid(claims):
            raise ApiError(401, "Unauthorized", "Unauthorized")
        namespace = claims["kubernetes.io"]["namespace"]
        return User(claims["sub"], ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                                    "system:authenticated"))

    def _still_valid(self, claims: dict) -> bool:
        """A token dies with its service account (and with its pod, when bound to one)."""
        info = claims.get("kubernetes.io") or {}
        checks = [("serviceaccounts", info.get("serviceaccount") or {})]
        if info.get("pod"):
            checks.append(("pods", info["pod"]))
        for resource, ref in checks:
            try:
                obj = self.store.get(resource, info.get("namespace"), ref.get("name", ""), copy=False)
            except ApiError:
                return False
            if obj["metadata"]["uid"] != ref.get("uid"):
                return False
        return True

    # -- RBAC -----------------------------------------------------------------------------
    def allowed(self, user: User, req: Request) -> bool:
        if user.admin:
            return True
        if req.path is not None:
            return self._open_path(req.path) or any(self._rule_allows(r, req) for r in self._rules(user, None))
        if (req.group, req.resource) == ("authorization.k8s.io", "selfsubjectaccessreviews"):
            return True
        return any(self._rule_allows(rule, req) for rule in self._rules(user, req.namespace))

    @staticmethod
    def _open_path(path: str) -> bool:
        return path in ("/version", "/healthz", "/readyz", "/livez", "/api", "/apis") or \
            path.startswith(("/api/", "/apis/", "/openapi/"))

    def _rules(self, user: User, namespace: str | None) -> list[dict]:
        rules: list[dict] = []
        for binding in self.store.list("clusterrolebindings.rbac.authorization.k8s.io"):
            if self._binds(binding, user):
                rules += self._role_rules(binding["roleRef"], None)
        if namespace:
            for binding in self.store.list("rolebindings.rbac.authorization.k8s.io", namespace):
                if self._binds(binding, user):
                    rules += self._role_rules(binding["roleRef"], namespace)
        return rules

    def _role_rules(self, ref: dict, namespace: str | None) -> list[dict]:
        kind = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
        try:
            role = self.store.get(f"{kind}.rbac.authorization.k8s.io", namespace if kind == "roles" else None,
                                  ref.get("name", ""))
        except ApiError:
            return []  # a binding to a missing role grants nothing, as on a real server
        return role.get("rules") or []

    @staticmethod
    def _binds(binding: dict, user: User) -> bool:
        sa = user.service_account
        for s in binding.get("subjects") or []:
            kind = s.get("kind")
            if kind == "ServiceAccount" and sa == (s.get("namespace") or binding["metadata"].get("namespace"), s.get("name")):
                return True
            if kind == "User" and s.get("name") == user.name:
                return True
            if kind == "Group" and s.get("name") in user.groups:
                return True
        return False

    @staticmethod
    def _rule_allows(rule: dict, req: Request) -> bool:
        verbs = rule.get("verbs") or []
        if "*" not in verbs and req.verb not in verbs:
            return False
        if req.path is not None:
            return any(u == req.path or u == "*" or (u.endswith("*") and req.path.startswith(u[:-1]))
                       for u in rule.get("nonResourceURLs") or [])
        groups = rule.get("apiGroups") or []
        if "*" not in groups and req.group not in groups:
            return False
        wanted = f"{req.resource}/{req.subresource}" if req.subresource else req.resource
        resources = rule.get("resources") or []
        if not any(r in ("*", wanted) or (r.endswith("/*") and req.subresource and r[:-2] == req.resource)
                   or (r.startswith("*/") and r[2:] == req.subresource) for r in resources):
            return False
        names = rule.get("resourceNames") or []
        return not names or req.name in names

    def check(self, user: User, req: Request) -> None:
        """Raise the real server's 403 when RBAC does not allow `req`."""
        if self.allowed(user, req):
            return
        what = f"{req.resource}.{req.group}" if req.group else req.resource
        if req.path is not None:
            raise ApiError(403, f'forbidden: User "{user.name}" cannot {req.verb} path "{req.path}"', "Forbidden")
        scope = f'in the namespace "{req.namespace}"' if req.namespace else "at the cluster scope"
        resource = f"{req.resource}/{req.subresource}" if req.subresource else req.resource
        subject = f'{what} "{req.name}"' if req.name else what
        raise ApiError(403, f'{subject} is forbidden: User "{user.name}" cannot {req.verb} resource "{resource}" in API '
                            f'group "{req.group}" {scope}', "Forbidden", kind=req.resource, name=req.name,
                       group=req.group or None)

    def access_review(self, user: User, spec: dict) -> dict:
        """A SelfSubjectAccessReview's status."""
        attrs, path = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if attrs:
            req = Request(attrs.get("verb", ""), attrs.get("group", ""), attrs.get("resource", ""),
                          attrs.get("subresource", ""), attrs.get("namespace") or None, attrs.get("name") or None)
        elif path:
            req = Request(path.get("verb", ""), path=path.get("path", ""))
        else:
            raise ApiError(422, "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec: Invalid value: "
                                "null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                           "Invalid")
        ok = self.allowed(user, req)
        return {"allowed": ok, **({"reason": "RBAC: allowed by the twin's bindings"} if ok and not user.admin else {})}


def default_key(seed_bytes: bytes) -> bytes:
    """The signing key for a twin: from its seed, so tokens are reproducible per seed."""
    return hashlib.sha256(b"stepgraph-twin-service-account-key:" + seed_bytes).digest()
