"""Settings of a subscription the source creates (topicId):
enableMessageOrdering and retainAckedMessages (with
messageRetentionSeconds), as the source's options parse them and its
driver creates it, read back with Google's own admin client from the
official emulator."""

from __future__ import annotations

import uuid

import pytest

from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.read.driver.subscription_lifecycle import DEFAULT_RETENTION_S, ensure_subscription
from pubsub_go.spark.read.options.source import SourceOptions


def _create(google, **options: str):
    topic, _ = google.topic()
    sub = f"projects/{google.project}/subscriptions/created-{uuid.uuid4().hex[:10]}"
    opts = SourceOptions.parse({"subscriptionId": sub, "topicId": topic, "emulatorHost": google.host_port,
                                **options})
    assert ensure_subscription(opts.subscription, opts.setup, opts.conn)
    return google.subscriber.get_subscription(subscription=sub, timeout=10)


def test_created_subscription_orders_and_retains_acked_messages(google) -> None:
    s = _create(google, enableMessageOrdering="true", retainAckedMessages="true", messageRetentionSeconds="3600")
    assert s.enable_message_ordering and s.retain_acked_messages
    assert s.message_retention_duration.total_seconds() == 3600


def test_retained_acked_messages_default_to_seven_days(google) -> None:
    s = _create(google, retainAckedMessages="true")
    assert s.retain_acked_messages and not s.enable_message_ordering
    assert s.message_retention_duration.total_seconds() == DEFAULT_RETENTION_S


def test_without_the_options_neither_is_set(google) -> None:
    s = _create(google)
    assert not s.enable_message_ordering and not s.retain_acked_messages


@pytest.mark.parametrize("option", ["enableMessageOrdering", "retainAckedMessages"])
def test_settings_need_topic_id(option: str) -> None:
    with pytest.raises(OptionError, match=f"option {option} only applies when the source creates"):
        SourceOptions.parse({"subscriptionId": "projects/p/subscriptions/s", "emulatorHost": "127.0.0.1:1",
                             option: "true"})
