"""The real auth path without the cloud: a service-account key made here,
a local token server, and a local TLS Pub/Sub endpoint (tests/authproxy in
front of the official emulator) that checks every call's bearer token.
The client runs in a fresh process, so its Go runtime reads SSL_CERT_FILE
(the self-signed CA) at start, as a deployment would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from authpeers import TARGET, AuthProxy, ServiceAccount, TokenServer
from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.read.options.source import SourceOptions
from pubsub_go.spark.write.options import SinkOptions

CLIENT = r"""
import json, sys, time
from pubsub_go import Publisher, Subscriber
from pubsub_go.errors import PubSubError
cfg = json.loads(sys.stdin.read())
conn = cfg["conn"]
try:
    import pyarrow as pa
    with Publisher(topic=cfg["topic"], open_timeout_ms=5000, **conn) as pub:
        pub.publish(pa.record_batch({"payload": pa.array([b"m%d" % i for i in range(cfg["n"])])}))
        pub.flush(timeout_ms=30000)
    got = 0
    with Subscriber(subscription=cfg["sub"], open_timeout_ms=5000, **conn) as sub:
        deadline = time.monotonic() + 30
        while got < cfg["n"] and time.monotonic() < deadline:
            batch, ids = sub.next_batch(max_rows=100, wait_ms=500)
            got += batch.num_rows
            if len(ids):
                sub.ack(ids)
    print(json.dumps({"ok": True, "read": got}))
except PubSubError as e:
    print(json.dumps({"ok": False, "kind": type(e).__name__, "error": str(e)}))
"""


@pytest.fixture()
def sa() -> ServiceAccount:
    return ServiceAccount()


@pytest.fixture()
def tokens(sa):
    srv = TokenServer(sa)
    yield srv
    srv.stop()


def start_proxy(emulator, sa, tokens: list[str], tmp_path: Path, key: bool = True) -> AuthProxy:
    d = tmp_path / f"proxy{len(list(tmp_path.glob('proxy*')))}"
    d.mkdir()
    return AuthProxy(emulator.host_port, sa if key else ServiceAccount(email="nobody@x"), tokens, d)


def run_client(proxy: AuthProxy, conn: dict, topic: str, sub: str, n: int = 50) -> tuple[dict, str]:
    """Runs CLIENT in a fresh process; returns its result and all it printed."""
    env = dict(os.environ, SSL_CERT_FILE=str(proxy.ca_file))
    env.pop("PUBSUB_EMULATOR_HOST", None)
    env.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    cfg = {"conn": {"endpoint": proxy.host_port, **conn}, "topic": topic, "sub": sub, "n": n}
    p = subprocess.run([sys.executable, "-c", CLIENT], input=json.dumps(cfg), capture_output=True, text=True,
                       env=env, timeout=120, cwd="/tmp")
    out = p.stdout + p.stderr
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    assert lines, f"client printed no result (exit {p.returncode}):\n{out}"
    return json.loads(lines[-1]), out


def assert_no_secret(text: str, sa: ServiceAccount, *secret_tokens: str) -> None:
    key_body = sa.private_pem.splitlines()[1]  # a line of the base64 key material
    assert key_body not in text and "PRIVATE KEY" not in text, "the private key leaked"
    for t in secret_tokens:
        assert t not in text, "an access token leaked"


def test_inline_key_over_tls_with_checked_tokens(google, emulator, sa, tokens, tmp_path):
    topic, sub = google.topic()
    proxy = start_proxy(emulator, sa, [tokens.access_token], tmp_path)
    try:
        res, out = run_client(proxy, {"credentials_json": sa.json(tokens.token_uri)}, topic, sub)
        assert res == {"ok": True, "read": 50}, out
        # Google's Go client signs its own JWT with a service-account key for
        # Pub/Sub (self-signed JWT, no token exchange: the token_uri is never
        # called); the proxy verified its signature on every call.
        assert not proxy.rejections, proxy.rejections
        assert "/token" not in tokens.calls
        assert_no_secret(out + proxy.log.read_text(), sa, tokens.access_token)
    finally:
        proxy.stop()


def test_key_file_over_tls(google, emulator, sa, tokens, tmp_path):
    topic, sub = google.topic()
    key = tmp_path / "key.json"
    key.write_text(sa.json(tokens.token_uri))
    proxy = start_proxy(emulator, sa, [], tmp_path)
    try:
        res, out = run_client(proxy, {"credentials_file": str(key)}, topic, sub)
        assert res == {"ok": True, "read": 50}, out
    finally:
        proxy.stop()


def test_impersonation_gets_the_target_token_from_iam_credentials(google, emulator, sa, tokens, tmp_path):
    topic, sub = google.topic()
    # This endpoint knows no key: only the token IAM Credentials issues for TARGET passes.
    proxy = start_proxy(emulator, sa, [tokens.impersonated_token], tmp_path, key=False)
    try:
        conn = {"credentials_json": sa.json(tokens.token_uri), "impersonate_service_account": TARGET,
                "iam_credentials_endpoint": tokens.url}
        res, out = run_client(proxy, conn, topic, sub)
        assert res == {"ok": True, "read": 50}, (out, proxy.rejections, tokens.rejected)
        assert any(c.endswith(":generateAccessToken") and TARGET in c for c in tokens.calls), tokens.calls
        assert not proxy.rejections and not tokens.rejected
        assert_no_secret(out + proxy.log.read_text(), sa, tokens.access_token, tokens.impersonated_token)
    finally:
        proxy.stop()


def test_wrong_key_fails_fast_without_echoing_secrets(google, emulator, sa, tokens, tmp_path):
    topic, sub = google.topic()
    proxy = start_proxy(emulator, sa, [tokens.access_token], tmp_path)
    impostor = ServiceAccount(email=sa.email)  # same name, another key
    try:
        t0 = time.monotonic()
        res, out = run_client(proxy, {"credentials_json": impostor.json(tokens.token_uri)}, topic, sub)
        took = time.monotonic() - t0
        assert not res["ok"] and res["kind"] == "PermissionDeniedError", res
        assert "UNAUTHENTICATED" in res["error"] and "does not verify" in res["error"], res
        assert took < 20, f"a rejected key took {took:.1f}s to fail"
        assert proxy.rejections, "the endpoint never saw the call"
        assert_no_secret(out + proxy.log.read_text(), impostor, tokens.access_token)
        assert_no_secret(out, sa)
    finally:
        proxy.stop()


def test_impersonation_refused_by_iam_fails_without_echoing_secrets(google, emulator, sa, tokens, tmp_path):
    topic, sub = google.topic()
    proxy = start_proxy(emulator, sa, [tokens.impersonated_token], tmp_path, key=False)
    try:
        conn = {"credentials_json": sa.json(tokens.token_uri),
                "impersonate_service_account": "someone-else@pubsub-go-test.iam.gserviceaccount.com",
                "iam_credentials_endpoint": tokens.url}
        res, out = run_client(proxy, conn, topic, sub)
        assert not res["ok"] and "401" in res["error"], res
        assert tokens.rejected, "the token server never refused"
        assert_no_secret(out, sa, tokens.impersonated_token)
    finally:
        proxy.stop()


# -- options: the secret stays out of reprs and errors ----------------------

def test_inline_credentials_never_in_repr_or_errors(sa, tmp_path):
    creds = sa.json("http://127.0.0.1:1/token")
    o = SourceOptions.parse({"subscriptionId": "s", "credentialsJson": creds, "batchLogLocation": str(tmp_path)})
    assert o.subscription == "projects/pubsub-go-test/subscriptions/s"  # the project from the key
    assert o.conn.credentials_json == creds
    assert_no_secret(repr(o) + str(o), sa)
    s = SinkOptions.parse({"topicId": "t", "credentialsJson": creds})
    assert s.topic == "projects/pubsub-go-test/topics/t"
    assert_no_secret(repr(s) + repr(s.publisher_config()), sa)
    key = tmp_path / "key.json"
    key.write_text(creds)
    from_file = SourceOptions.parse({"subscriptionId": "projects/p/subscriptions/s", "credentials": str(key),
                                     "batchLogLocation": str(tmp_path)})
    assert from_file.conn.credentials_json == creds  # read on the driver: executors need no file
    broken = creds[:-40]  # cut inside the key
    with pytest.raises(OptionError) as e:
        SourceOptions.parse({"subscriptionId": "projects/p/subscriptions/s", "credentialsJson": broken})
    assert "not valid JSON" in str(e.value)
    assert_no_secret(str(e.value), sa)
    with pytest.raises(OptionError) as e:
        SourceOptions.parse({"subscriptionId": "projects/p/subscriptions/s", "credentialsJson": creds,
                             "credentials": str(key)})
    assert "set one of" in str(e.value)


def test_project_from_environment(monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "envproj")
    assert SinkOptions.parse({"topicId": "t", "emulatorHost": "h:1"}).topic == "projects/envproj/topics/t"
    assert SourceOptions.parse({"subscriptionId": "s", "emulatorHost": "h:1", "batchLogLocation": "/tmp/x"}
                               ).subscription == "projects/envproj/subscriptions/s"


@pytest.mark.parametrize("options, expected", [
    ({"endpoint": "pubsub.googleapis.com"}, "must be host:port"),
    ({"endpoint": "a:443", "emulatorHost": "b:1"}, "exclusive"),
    ({"impersonateServiceAccount": "writer"}, "service account email"),
    ({"iamCredentialsEndpoint": "https://x"}, "only applies with impersonateServiceAccount"),
    ({"credentialsJson": '{"type": "service_account"}'}, "needs private_key and client_email"),
])
def test_bad_connection_options_name_the_option(options, expected):
    with pytest.raises(OptionError) as e:
        SinkOptions.parse({"topicId": "projects/p/topics/t", **options})
    assert expected in str(e.value)


@pytest.mark.spark
def test_spark_reads_and_writes_over_tls_with_inline_key(google, emulator, sa, tokens, tmp_path):
    """Source and sink with endpoint + credentialsJson; the key reaches the
    executors inside the options and shows nowhere Spark prints options."""
    import pubsub_go
    from sparkutil import run_until, spark_session, stop_spark

    topic, sub = google.topic(ack_deadline=30)
    out_topic, out_sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"p%d" % i for i in range(40)])
    proxy = start_proxy(emulator, sa, [tokens.access_token], tmp_path)
    creds = sa.json(tokens.token_uri)
    stop_spark()  # Python workers get the CA through executorEnv, set when the context starts
    spark = spark_session(master="local[2]", spark__executorEnv__SSL_CERT_FILE=str(proxy.ca_file))
    pubsub_go.register(spark)
    try:
        df = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
              .option("endpoint", proxy.host_port).option("credentialsJson", creds)
              .option("batchLogLocation", str(tmp_path / "log")).option("numPartitions", "1")
              .option("maxWaitTimeMs", "300").load())
        q = (df.select("payload").writeStream.format("pubsub-go").option("topicId", out_topic)
             .option("endpoint", proxy.host_port).option("credentialsJson", creds)
             .option("checkpointLocation", str(tmp_path / "ck")).start())
        got: list = []
        try:
            run_until(q, lambda: got.extend(google.pull_all(out_sub, max_wait=1)) or len(got) >= 40, timeout=180)
            shown = [q._jsq.explainInternal(True), json.dumps(q.recentProgress, default=str), str(q.status),
                     df._jdf.queryExecution().toString()]
        finally:
            q.stop()
        assert sorted(m.message.data for m in got) == sorted(b"p%d" % i for i in range(40))
        # The plan lists the options; Spark's redaction (spark.redaction.regex) hides this one.
        assert "credentialsJson=*********(redacted)" in shown[3], shown[3][:2000]
        logs = "\n".join(p.read_text(errors="replace") for p in tmp_path.rglob("*.log"))
        assert_no_secret("\n".join(shown) + logs, sa, tokens.access_token)
        assert not proxy.rejections, proxy.rejections
    finally:
        stop_spark()
        proxy.stop()


def test_project_from_application_default_credentials(sa, tmp_path):
    """No projectId, no GOOGLE_CLOUD_PROJECT, no credentials option: the
    project comes from ADC (here GOOGLE_APPLICATION_CREDENTIALS), found by
    the Go auth library. A fresh process: Go reads its environment at load."""
    key = tmp_path / "adc.json"
    key.write_text(ServiceAccount(project="adc-project").json("http://127.0.0.1:1/token"))
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_CLOUD_PROJECT", "PUBSUB_EMULATOR_HOST")}
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(key)
    code = ("from pubsub_go.spark.write.options import SinkOptions\n"
            "print(SinkOptions.parse({'topicId': 't'}).topic)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, cwd="/tmp")
    assert p.stdout.strip() == "projects/adc-project/topics/t", p.stdout + p.stderr


# -- the options, as the front ends parse them, reach the library ---------------

def _parsed_connection(side: str, options: dict[str, str], endpoint: str, tmp_path: Path) -> dict:
    """The connection fields a front end hands the library for options."""
    if side == "source":
        conn = SourceOptions.parse({"subscriptionId": "projects/p/subscriptions/s", "endpoint": endpoint,
                                    "batchLogLocation": str(tmp_path / "log"), **options}).conn
    else:
        conn = SinkOptions.parse({"topicId": "projects/p/topics/t", "endpoint": endpoint, **options}).conn
    # Every field, unset ones too: run_client's own endpoint must not stand in for the option's.
    return conn.client_kwargs()


@pytest.mark.parametrize("side", ["source", "sink"])
def test_key_file_option_authenticates_every_call(google, emulator, sa, tokens, tmp_path, monkeypatch, side):
    """credentials=<key file> and endpoint: the endpoint checks each call's
    JWT against the key; without the key the calls would be refused, and
    without the endpoint they would go to Google."""
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    topic, sub = google.topic()
    key = tmp_path / "key.json"
    key.write_text(sa.json(tokens.token_uri))
    proxy = start_proxy(emulator, sa, [], tmp_path)
    try:
        conn = _parsed_connection(side, {"credentials": str(key)}, proxy.host_port, tmp_path)
        res, out = run_client(proxy, conn, topic, sub)
        assert res == {"ok": True, "read": 50}, (out, proxy.rejections)
        assert not proxy.rejections
    finally:
        proxy.stop()


@pytest.mark.parametrize("side", ["source", "sink"])
def test_impersonation_options_take_the_targets_token(google, emulator, sa, tokens, tmp_path, monkeypatch, side):
    """impersonateServiceAccount + iamCredentialsEndpoint: the endpoint
    accepts only the token IAM Credentials issues for TARGET, asked of the
    endpoint the option names."""
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    topic, sub = google.topic()
    key = tmp_path / "key.json"
    key.write_text(sa.json(tokens.token_uri))
    proxy = start_proxy(emulator, sa, [tokens.impersonated_token], tmp_path, key=False)
    try:
        conn = _parsed_connection(side, {"credentials": str(key), "impersonateServiceAccount": TARGET,
                                         "iamCredentialsEndpoint": tokens.url}, proxy.host_port, tmp_path)
        res, out = run_client(proxy, conn, topic, sub)
        assert res == {"ok": True, "read": 50}, (out, proxy.rejections, tokens.rejected)
        assert any(c.endswith(":generateAccessToken") and TARGET in c for c in tokens.calls), tokens.calls
        assert not proxy.rejections and not tokens.rejected
    finally:
        proxy.stop()
