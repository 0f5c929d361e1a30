"""Local stand-ins for Google's auth path, for tests/test_credentials.py:
a service-account key made here (RSA), a token server that checks signed
JWT assertions and hands out access tokens (OAuth 2 token endpoint and the
IAM Credentials generateAccessToken endpoint), and tests/authproxy, a TLS
gRPC endpoint in front of the official emulator that checks bearer tokens."""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import threading
import time
import urllib.parse
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from emulators import go_binary

EMAIL = "reader@pubsub-go-test.iam.gserviceaccount.com"
TARGET = "writer@pubsub-go-test.iam.gserviceaccount.com"


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))


class ServiceAccount:
    """A service-account key of our own making; token_uri is set later."""

    def __init__(self, email: str = EMAIL, project: str = "pubsub-go-test") -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.email = email
        self.project = project
        self.private_pem = self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()).decode()
        self.public_pem = self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()

    def json(self, token_uri: str) -> str:
        return json.dumps({
            "type": "service_account", "project_id": self.project, "private_key_id": secrets.token_hex(20),
            "private_key": self.private_pem, "client_email": self.email, "client_id": "1234567890",
            "token_uri": token_uri,
        })

    def verify_jwt(self, token: str) -> dict:
        """The claims of a JWT this key signed (RS256), or ValueError."""
        try:
            head, body, sig = token.encode().split(b".")
            self.key.public_key().verify(_b64(sig), head + b"." + body, padding.PKCS1v15(), hashes.SHA256())
        except (ValueError, InvalidSignature):
            raise ValueError("JWT not signed by the service account's key") from None
        claims = json.loads(_b64(body))
        if claims.get("iss") != self.email or claims.get("exp", 0) < time.time():
            raise ValueError("JWT issuer or expiry wrong")
        return claims


class TokenServer:
    """OAuth 2 token endpoint (JWT bearer grant) and IAM Credentials
    generateAccessToken, on 127.0.0.1, plain HTTP."""

    def __init__(self, sa: ServiceAccount) -> None:
        self.sa = sa
        self.access_token = "ya29.test-" + secrets.token_urlsafe(24)  # what /token hands out
        self.impersonated_token = "ya29.imp-" + secrets.token_urlsafe(24)  # for TARGET
        self.calls: list[str] = []
        self.rejected: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _reply(self, code: int, doc: dict) -> None:
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.calls.append(self.path)
                try:
                    if self.path == "/token":
                        form = urllib.parse.parse_qs(raw.decode())
                        claims = server.sa.verify_jwt(form["assertion"][0])
                        if claims.get("aud") != server.token_uri:
                            raise ValueError("assertion audience is not the token_uri")
                        self._reply(200, {"access_token": server.access_token, "expires_in": 3600,
                                          "token_type": "Bearer"})
                        return
                    if self.path.endswith(":generateAccessToken"):
                        auth = self.headers.get("Authorization", "")
                        tok = auth.removeprefix("Bearer ")
                        if tok != server.access_token:
                            server.sa.verify_jwt(tok)  # a self-signed JWT of the source account
                        if TARGET not in urllib.parse.unquote(self.path):
                            raise ValueError("unknown target service account")
                        expire = datetime.now(timezone.utc) + timedelta(hours=1)
                        self._reply(200, {"accessToken": server.impersonated_token,
                                          "expireTime": expire.strftime("%Y-%m-%dT%H:%M:%SZ")})
                        return
                    self._reply(404, {"error": "not_found"})
                except (ValueError, KeyError) as e:
                    server.rejected.append(f"{self.path}: {e}")
                    self._reply(401, {"error": "invalid_grant", "error_description": str(e)})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.token_uri = self.url + "/token"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class AuthProxy:
    """tests/authproxy: TLS + bearer-token checks in front of an emulator."""

    @staticmethod
    def build() -> Path:
        return go_binary("./tests/authproxy")

    def __init__(self, upstream: str, sa: ServiceAccount, tokens: list[str], workdir: Path) -> None:
        self.ca_file = workdir / "ca.pem"
        key_file = workdir / "sa-public.pem"
        key_file.write_text(sa.public_pem)
        self.log = workdir / "authproxy.log"
        self._log = open(self.log, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [str(self.build()), "--upstream", upstream, "--ca-out", str(self.ca_file), "--public-key", str(key_file),
             "--email", sa.email, "--tokens", ",".join(tokens)],
            stdout=subprocess.PIPE, stderr=self._log, text=True)
        first = self.proc.stdout.readline().strip()
        if not first.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"authproxy did not start: {first!r}")
        self.host_port = first.removeprefix("listening on ")
        self.rejections: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.rejections.append(line.strip())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self._log.close()
