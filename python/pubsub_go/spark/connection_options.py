"""The connection options both sides share (emulatorHost, endpoint,
credentials, impersonation) and the resource paths built from them
(projectId plus an id, or a full path), checked on the driver."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import field, fields, make_dataclass

from .. import contract
from .option_table import text
from .optparse import OptionError

log = logging.getLogger("pubsub_go.options")


class _ConnectionMethods:
    def client_kwargs(self) -> dict[str, str | None]:
        """Keyword arguments for SubscriberConfig/PublisherConfig/admin()."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    def project_from_credentials(self) -> str | None:
        creds = getattr(self, "credentials_json", None)
        if not creds:
            return None
        try:
            doc = json.loads(creds)
        except ValueError:
            return None
        p = doc.get("project_id") or doc.get("quota_project_id") if isinstance(doc, dict) else None
        return p if isinstance(p, str) and p else None


# Where Pub/Sub is and how to authenticate; picklable, shipped to every
# task. Its fields are the library's connection fields (the contract), less
# credentials_file: the parser reads that file into credentials_json, so a
# task needs no file. A secret (the credentials JSON) is left out of repr()
# (and so of any error or log line that formats these options).
ConnectionOptions = make_dataclass(
    "ConnectionOptions",
    [(f.name, str | None, field(default=None, repr=not f.secret))
     for f in contract.connection_fields() if f.name != "credentials_file"],
    bases=(_ConnectionMethods,), frozen=True,
    namespace={"__module__": __name__, "__doc__": "Where Pub/Sub is and how to authenticate (the contract's "
                                                  "connection fields, credentials read into credentials_json)."})


def _credentials_json(raw: str, name: str) -> str:
    """Checks inline credentials without ever quoting them in an error."""
    text = raw.strip()
    try:
        doc = json.loads(text)
    except ValueError as e:
        pos = getattr(e, "pos", None)
        raise OptionError(f"option {name} is not valid JSON (error at character {pos}); expected the content "
                          "of a credentials JSON file, e.g. a service-account key") from None
    if not isinstance(doc, dict) or not doc.get("type"):
        raise OptionError(f'option {name} must be a credentials JSON object with a "type", e.g. a '
                          'service-account key ("type": "service_account")')
    if doc["type"] == "service_account" and not (doc.get("private_key") and doc.get("client_email")):
        raise OptionError(f"option {name}: a service_account key needs private_key and client_email")
    return text


def connection_options(opts: Mapping[str, str]) -> ConnectionOptions:
    """emulatorHost (else PUBSUB_EMULATOR_HOST), endpoint and credentials,
    checked. A credentials file is read here, on the driver, and its content
    travels with the options: executors need no copy of it."""
    endpoint = text(opts, "endpoint")
    emulator = text(opts, "emulatorHost")
    if emulator and endpoint:
        raise OptionError("options emulatorHost and endpoint are exclusive: emulatorHost is a plaintext emulator, "
                          "endpoint a TLS Pub/Sub endpoint (e.g. us-east1-pubsub.googleapis.com:443)")
    if not endpoint:
        emulator = emulator or (os.environ.get("PUBSUB_EMULATOR_HOST") or "").strip() or None
    if emulator and (":" not in emulator or not emulator.rsplit(":", 1)[1].isdigit()):
        raise OptionError(f"option emulatorHost={emulator!r} (or PUBSUB_EMULATOR_HOST) must be "
                          "host:port, e.g. 127.0.0.1:8085")
    if endpoint and (":" not in endpoint or not endpoint.rsplit(":", 1)[1].isdigit()):
        raise OptionError(f"option endpoint={endpoint!r} must be host:port, e.g. "
                          "us-east1-pubsub.googleapis.com:443")
    files = [n for n in ("credentials", "credentialsFile") if text(opts, n)]
    inline = text(opts, "credentialsJson")
    if len(files) + (inline is not None) > 1:
        raise OptionError("set one of the options credentials (alias credentialsFile: a path) and "
                          "credentialsJson (the JSON itself)")
    creds_json = None
    if files:
        path = text(opts, files[0]) or ""
        if not os.path.isfile(path):
            raise OptionError(f"option {files[0]}={path!r}: no such file; expected the path of a "
                              "service-account key JSON (or leave it unset for Application Default Credentials)")
        try:
            with open(path, encoding="utf-8") as f:
                creds_json = _credentials_json(f.read(), f"{files[0]} (file {path})")
        except OSError as e:
            raise OptionError(f"option {files[0]}={path!r} cannot be read: {e.strerror}") from None
    elif inline is not None:
        creds_json = _credentials_json(inline, "credentialsJson")
    target = text(opts, "impersonateServiceAccount")
    if target and "@" not in target:
        raise OptionError(f"option impersonateServiceAccount={target!r} must be a service account email, "
                          "e.g. reader@my-project.iam.gserviceaccount.com")
    iam = text(opts, "iamCredentialsEndpoint")
    if iam and not target:
        raise OptionError("option iamCredentialsEndpoint only applies with impersonateServiceAccount")
    if iam and not iam.startswith(("https://", "http://")):
        raise OptionError(f"option iamCredentialsEndpoint={iam!r} must be a base URL, "
                          "e.g. https://iamcredentials.googleapis.com")
    return ConnectionOptions(emulator_host=emulator, endpoint=endpoint, credentials_json=creds_json,
                             impersonate_service_account=target, iam_credentials_endpoint=iam)


def default_project(conn: ConnectionOptions) -> str | None:
    """The project when no projectId is given: GOOGLE_CLOUD_PROJECT, else the
    credentials' project, else Application Default Credentials' (asked of
    the Go auth library: key file, gcloud, metadata server)."""
    env = (os.environ.get("GOOGLE_CLOUD_PROJECT") or "").strip()
    if env:
        return env
    p = conn.project_from_credentials()
    if p or conn.emulator_host:
        return p
    from ..client import admin

    try:
        return admin("default_project", **conn.client_kwargs()).get("project") or None
    except Exception as e:  # no ADC at all: the caller says a project is needed
        log.info("no default project from Application Default Credentials: %s", e)
        return None


def resource_path(opts: Mapping[str, str], name: str, kind: str, to_path: Callable[[str | None, str], str],
                  conn: ConnectionOptions, why: str = "") -> str:
    """The full path (projects/P/<kind>s/ID) of the resource option `name`
    names: a full path, or an id in projectId (else the default project).
    to_path is the client's path builder for that kind."""
    project = text(opts, "projectId")
    raw = text(opts, name) or ""
    if not raw:
        raise OptionError(f"option {name} is required{why}: a {kind} id (with projectId) "
                          f"or a full path projects/PROJECT/{kind}s/ID")
    if project is None and not raw.startswith("projects/"):
        project = default_project(conn)
    try:
        path = to_path(project, raw)
    except ValueError as e:
        raise OptionError(f"option {name}: {e}; set projectId (or GOOGLE_CLOUD_PROJECT) or give "
                          "the full path") from None
    if project and path.split("/")[1] != project and "projectid" in opts:
        raise OptionError(f"option projectId={project!r} disagrees with {name}={raw!r}; "
                          "drop projectId or make them match")
    return path
