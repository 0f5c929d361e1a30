"""Option names users bring from Databricks' `pubsub` source, Spark's Kafka
source and Google's Pub/Sub Lite connector (spark/aliases.py), and
durations as Spark writes them (spark/durations.py): parsed as ours, bad
input refused at query start naming the option and what is accepted, and
queries written for those connectors run against the official emulator
with their options unchanged (only the format name, and emulatorHost to
reach the emulator)."""

from __future__ import annotations

import base64
import json
import time

import pytest

from authpeers import ServiceAccount
from pubsub_go.spark.aliases import DATABRICKS_CREDENTIALS, SINK_ALIASES, SOURCE_ALIASES
from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.read.options.source import SourceOptions
from pubsub_go.spark.write.options import SinkOptions

BASE = {"subscriptionId": "projects/p/subscriptions/s", "emulatorHost": "127.0.0.1:1",
        "batchLogLocation": "/tmp/pubsub-go-alias-test"}
SINK_BASE = {"topicId": "projects/p/topics/t", "emulatorHost": "127.0.0.1:1"}
# A value each alias's option takes, and the parsed field it lands in.
SOURCE_VALUES = {
    "numPartitions": ("3", "num_partitions", 3),
    "maxBatchDurationMs": ("7s", "max_batch_duration_ms", 7000),
    "maxRecordsPerPartition": ("1000", "max_records_per_partition", 1000),
    "maxRecordsPerTrigger": ("500", "limits.max_rows", 500),
    "minRecordsPerTrigger": ("20", "limits.min_rows", 20),
    "subscriptionId": ("projects/p/locations/us-central1-a/subscriptions/s2", "subscription",
                       "projects/p/subscriptions/s2"),
    "maxBytesPerPartition": ("1048576", "max_bytes_per_partition", 1 << 20),
    "maxOutstandingMessages": ("5000", "max_outstanding_messages", 5000),
}


def _get(obj: object, dotted: str) -> object:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.fixture(autouse=True)
def _local_master(monkeypatch):
    monkeypatch.delenv("PUBSUB_GO_SPARK_MASTER", raising=False)


@pytest.mark.parametrize("alias", [a for a in SOURCE_ALIASES if a.ours in SOURCE_VALUES], ids=lambda a: a.name)
def test_every_source_alias_sets_its_option(alias):
    raw, field, expected = SOURCE_VALUES[alias.ours]
    opts = {k: v for k, v in BASE.items() if k.lower() != alias.ours.lower()}
    assert _get(SourceOptions.parse({**opts, alias.name: raw}), field) == expected
    if alias.ours != "subscriptionId":  # a plain value is the same through either name
        assert _get(SourceOptions.parse({**opts, alias.ours: raw, alias.name: raw}), field) == expected


def test_sink_alias_drops_the_lite_location():
    lite = "projects/p/locations/europe-west1/topics/t"
    s = SinkOptions.parse({"emulatorHost": "127.0.0.1:1", "pubsublite.topic": lite})
    assert s.topic == "projects/p/topics/t"
    assert [a.name for a in SINK_ALIASES]  # the table exists and the sink reads it


@pytest.mark.parametrize("alias,ours,a,b", [
    ("maxOffsetsPerTrigger", "maxRecordsPerTrigger", "100", "200"),
    ("numFetchPartitions", "numPartitions", "2", "4"),
    ("pubsublite.flowcontrol.maxmessagesperbatch", "maxOffsetsPerTrigger", "10", "20"),
    ("maxFetchPeriod", "maxBatchDurationMs", "10s", "5000"),
])
def test_alias_and_name_with_different_values_fail_naming_both(alias, ours, a, b):
    with pytest.raises(OptionError) as e:
        SourceOptions.parse({**BASE, alias: a, ours: b})
    msg = str(e.value)
    assert alias in msg and ours in msg and "different values" in msg, msg
    # The same value through both names is no conflict ("10s" is 10000 ms, but
    # values are compared as given: only an identical one is the same).
    SourceOptions.parse({**BASE, alias: a, ours: a})


@pytest.mark.parametrize("name,expected", [
    ("failOnDataLoss", "Pub/Sub cannot lose a message"),
    ("kafka.bootstrap.servers", "kafka.* options configure a Kafka client"),
    ("startingOffsets", "use startingTimestamp or startingSnapshot"),
    ("subscribe", "set subscriptionId"),
])
def test_options_without_meaning_for_pubsub_say_why(name, expected):
    for parse, base in ((SourceOptions.parse, BASE), (SinkOptions.parse, SINK_BASE)):
        with pytest.raises(OptionError) as e:
            parse({**base, name: "x"})
        assert "no meaning for Pub/Sub" in str(e.value) and expected in str(e.value)
        assert "unknown option" not in str(e.value)


@pytest.mark.parametrize("typo,suggested", [
    ("maxRecordsPerTriger", "maxRecordsPerTrigger"),
    ("maxOffsetPerTrigger", "maxOffsetsPerTrigger"),
    ("numFetchPartition", "numFetchPartitions"),
    ("minRecordPerTrigger", "minRecordsPerTrigger"),
    ("maxTriggerDelays", "maxTriggerDelay"),
])
def test_did_you_mean_names_the_closest_accepted_name(typo, suggested):
    with pytest.raises(OptionError) as e:
        SourceOptions.parse({**BASE, typo: "1"})
    assert f"did you mean {suggested}?" in str(e.value), str(e.value)


# -- durations --------------------------------------------------------------

@pytest.mark.parametrize("raw,expected_ms", [
    ("2500", 2500), ("10s", 10_000), ("500ms", 500), ("2 minutes", 120_000), ("1.5s", 1500), ("1h", 3_600_000),
    (" 3 sec ", 3000), ("2min", 120_000),
])
def test_durations_as_spark_writes_them(raw, expected_ms):
    assert SourceOptions.parse({**BASE, "maxBatchDurationMs": raw}).max_batch_duration_ms == expected_ms
    assert SinkOptions.parse({**SINK_BASE, "publisherIdleMs": raw}).publisher_idle_ms == expected_ms


def test_seconds_options_take_durations_in_whole_seconds():
    assert SourceOptions.parse({**BASE, "ackDeadlineSeconds": "1 minute"}).ack_deadline_seconds == 60
    assert SourceOptions.parse({**BASE, "ackDeadlineSeconds": "30"}).ack_deadline_seconds == 30
    with pytest.raises(OptionError, match="ackDeadlineSeconds='1500ms' is not a duration in whole seconds"):
        SourceOptions.parse({**BASE, "ackDeadlineSeconds": "1500ms"})


@pytest.mark.parametrize("name,raw", [
    ("maxWaitTimeMs", "10 parsecs"), ("quietPeriodMs", "ten seconds"), ("maxTriggerDelay", "5x"),
    ("subscriberIdleMs", "-1s"), ("commitLeaseSeconds", "2.5"),
])
def test_malformed_duration_names_option_value_and_forms(name, raw):
    opts = {**BASE, name: raw}
    if name == "maxTriggerDelay":
        opts["minRecordsPerTrigger"] = "10"
    with pytest.raises(OptionError) as e:
        SourceOptions.parse(opts)
    msg = str(e.value)
    assert f"{name}={raw!r}" in msg and "500ms, 10s, 2 minutes" in msg, msg


def test_an_error_about_an_alias_names_the_alias():
    with pytest.raises(OptionError) as e:
        SourceOptions.parse({**BASE, "maxFetchPeriod": "ten seconds"})
    assert "option maxFetchPeriod='ten seconds' is not a duration" in str(e.value)
    assert "maxFetchPeriod sets our option maxBatchDurationMs" in str(e.value)


def test_duration_out_of_range_names_the_range():
    with pytest.raises(OptionError, match=r"maxBatchDurationMs=2h is out of range; expected between 1 and 3600000"):
        SourceOptions.parse({**BASE, "maxBatchDurationMs": "2h"})


# -- credentials: Databricks' four fields, Pub/Sub Lite's base64 key ---------

def _databricks_fields(sa: ServiceAccount) -> dict[str, str]:
    return {"clientEmail": sa.email, "clientId": "1234567890", "privateKey": sa.private_pem,
            "privateKeyId": "abc123"}


def _no_secret(text: str, sa: ServiceAccount) -> None:
    assert sa.private_pem.splitlines()[1] not in text and "PRIVATE KEY" not in text, "the private key leaked"


def test_databricks_fields_make_a_service_account_key_kept_secret():
    sa = ServiceAccount()
    o = SourceOptions.parse({**BASE, **_databricks_fields(sa)})
    key = json.loads(o.conn.credentials_json)
    assert key == {"type": "service_account", "client_email": sa.email, "client_id": "1234567890",
                   "private_key": sa.private_pem, "private_key_id": "abc123",
                   "token_uri": "https://oauth2.googleapis.com/token"}
    _no_secret(repr(o) + str(o), sa)
    # A key pasted on one line, its newlines escaped, is the same key.
    one_line = {**_databricks_fields(sa), "privateKey": sa.private_pem.replace("\n", "\\n")}
    assert json.loads(SourceOptions.parse({**BASE, **one_line}).conn.credentials_json)["private_key"] == sa.private_pem


def test_databricks_fields_go_together_and_never_show_in_errors():
    sa = ServiceAccount()
    fields = _databricks_fields(sa)
    with pytest.raises(OptionError) as e:
        SourceOptions.parse({**BASE, **{k: v for k, v in fields.items() if k != "privateKeyId"}})
    assert "privateKeyId missing" in str(e.value)
    _no_secret(str(e.value), sa)
    with pytest.raises(OptionError) as e:
        SourceOptions.parse({**BASE, **fields, "credentialsJson": ServiceAccount().json("https://x/token")})
    assert "clientEmail/clientId/privateKey/privateKeyId" in str(e.value) and "credentialsJson" in str(e.value)
    _no_secret(str(e.value), sa)
    with pytest.raises(OptionError, match="privateKey is not a PEM private key"):
        SourceOptions.parse({**BASE, **fields, "privateKey": "not a key"})
    assert set(DATABRICKS_CREDENTIALS) == set(fields)


def test_lite_base64_key_is_decoded_and_malformed_is_refused_without_quoting_it():
    sa = ServiceAccount()
    creds = sa.json("https://oauth2.googleapis.com/token")
    b64 = base64.b64encode(creds.encode()).decode()
    assert SinkOptions.parse({**SINK_BASE, "gcp.credentials.key": b64}).conn.credentials_json == creds
    assert SourceOptions.parse({**BASE, "gcp.credentials.key": b64}).conn.credentials_json == creds
    for bad, expected in ((b64[:-3] + "!!!", "is not valid base64"),
                          (base64.b64encode(creds[:-30].encode()).decode(), "is not valid JSON")):
        with pytest.raises(OptionError) as e:
            SourceOptions.parse({**BASE, "gcp.credentials.key": bad})
        assert "gcp.credentials.key" in str(e.value) and expected in str(e.value), str(e.value)
        _no_secret(str(e.value), sa)
        assert bad[:40] not in str(e.value)


# -- queries written for other connectors, against the official emulator -----

@pytest.fixture(scope="module")
def spark(emulator):
    import pubsub_go
    from sparkutil import spark_session

    s = spark_session(master="local[2]")
    pubsub_go.register(s)
    return s


def _read_all(spark, df, n: int, name: str, tmp_path, timeout: float = 120) -> list:
    from sparkutil import run_until

    q = (df.selectExpr("CAST(payload AS STRING) AS p").writeStream.format("memory").queryName(name)
         .option("checkpointLocation", str(tmp_path / f"ck-{name}")).start())
    try:
        run_until(q, lambda: spark.sql(f"SELECT count(*) c FROM {name}").first().c >= n, timeout=timeout)
        shown = (q._jsq.explainInternal(True) + df._jdf.queryExecution().toString()
                 + json.dumps(q.recentProgress, default=str))
        progress = list(q.recentProgress)
    finally:
        q.stop()
    return [sorted(r.p for r in spark.sql(f"SELECT p FROM {name}").collect()), progress, shown]


@pytest.mark.spark
def test_a_databricks_query_runs_unchanged(spark, google, emulator, tmp_path):
    """Databricks' documented read: projectId/subscriptionId/topicId, its
    four credential fields, numFetchPartitions, maxFetchPeriod as a string,
    maxRecordsPerFetch. The key stays out of the plan Spark prints."""
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"d%d" % i for i in range(300)])
    sa = ServiceAccount()
    r = (spark.readStream.format("pubsub-go")  # Databricks: format("pubsub")
         .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "log")))
    for k, v in {"projectId": google.project, "subscriptionId": sub.rsplit("/", 1)[1],
                 "topicId": topic.rsplit("/", 1)[1], **_databricks_fields(sa), "numFetchPartitions": "2",
                 "maxFetchPeriod": "5s", "maxRecordsPerFetch": "100"}.items():
        r = r.option(k, v)
    got, progress, shown = _read_all(spark, r.load(), 300, "databricks", tmp_path)
    assert got == sorted(f"d{i}" for i in range(300))
    # maxRecordsPerFetch: 100 rows per task, 2 tasks.
    assert max(p["numInputRows"] for p in progress) <= 200, [p["numInputRows"] for p in progress]
    _no_secret(shown, sa)
    assert "privateKey=*********(redacted)" in shown, shown[:3000]


@pytest.mark.spark
def test_a_kafka_style_query_runs_unchanged(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"k%d" % i for i in range(250)])
    df = (spark.readStream.format("pubsub-go")  # Kafka: format("kafka") with subscribe=...
          .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "log"))
          .option("subscriptionId", sub).option("maxOffsetsPerTrigger", "100").option("minPartitions", "2")
          .option("minOffsetsPerTrigger", "10").option("maxTriggerDelay", "5s").load())
    got, progress, _ = _read_all(spark, df, 250, "kafkastyle", tmp_path)
    assert got == sorted(f"k{i}" for i in range(250))
    rows = [p["numInputRows"] for p in progress if p["numInputRows"]]
    assert max(rows) <= 100 and len(rows) >= 3, rows


@pytest.mark.spark
def test_a_pubsub_lite_style_query_runs_unchanged(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"l%d" % i for i in range(200)])
    sa = ServiceAccount()
    key = base64.b64encode(sa.json("https://oauth2.googleapis.com/token").encode()).decode()
    lite_path = sub.replace("/subscriptions/", "/locations/us-central1-a/subscriptions/")
    df = (spark.readStream.format("pubsub-go")  # Lite: format("pubsublite")
          .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "log"))
          .option("pubsublite.subscription", lite_path).option("gcp.credentials.key", key)
          .option("pubsublite.flowcontrol.byteoutstandingperpartition", "10485760")
          .option("pubsublite.flowcontrol.messageoutstandingperpartition", "1000")
          .option("pubsublite.flowcontrol.maxmessagesperbatch", "80").load())
    got, progress, shown = _read_all(spark, df, 200, "litestyle", tmp_path)
    assert got == sorted(f"l{i}" for i in range(200))
    assert max(p["numInputRows"] for p in progress) <= 80
    _no_secret(shown, sa)


@pytest.mark.spark
def test_bad_alias_input_fails_at_query_start(spark, google, emulator, tmp_path):
    """Conflicting alias and name, a malformed duration, a malformed base64
    key: each fails the query as it starts, naming the option."""
    _, sub = google.topic()
    cases = [({"maxOffsetsPerTrigger": "10", "maxRecordsPerTrigger": "20"}, "maxOffsetsPerTrigger"),
             ({"maxFetchPeriod": "ten seconds"}, "maxFetchPeriod='ten seconds'"),
             ({"gcp.credentials.key": "%%%not base64"}, "gcp.credentials.key is not valid base64")]
    for opts, expected in cases:
        r = (spark.readStream.format("pubsub-go").option("emulatorHost", emulator.host_port)
             .option("subscriptionId", sub).option("batchLogLocation", str(tmp_path / "log")))
        for k, v in opts.items():
            r = r.option(k, v)
        started = time.monotonic()
        with pytest.raises(Exception) as e:
            q = r.load().writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck")).start()
            try:
                q.awaitTermination(60)
            finally:
                q.stop()
        assert expected in str(e.value), str(e.value)[:2000]
        assert time.monotonic() - started < 60
