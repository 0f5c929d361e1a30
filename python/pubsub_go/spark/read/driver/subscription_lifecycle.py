"""Subscription lifecycle for the source, on the driver: with `topicId`, the
subscription is created when it does not exist (with the settings given
here); with `deleteSubscriptionOnStreamStop`, it is deleted when the query
stops. Nothing is created or deleted unless asked for."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....client import topic_path
from ...connection_options import ConnectionOptions
from ...option_table import SOURCE, table, text
from ...optparse import OptionError

log = logging.getLogger("pubsub_go.lifecycle")

_OPTIONS = table(SOURCE)
# Options that only mean something when the source may create the subscription.
CREATE_ONLY = _OPTIONS.requiring("topicId")

# The service's retention when messageRetentionSeconds is not given
# (https://cloud.google.com/pubsub/docs/subscription-properties); the
# option's range, the service's limits, is in the option table.
DEFAULT_RETENTION_S = 7 * 24 * 3600
DEFAULT_ATTEMPTS = _OPTIONS.default("maxDeliveryAttempts")


@dataclass(frozen=True)
class SubscriptionSetup:
    """How to create the subscription (topic set) and whether to delete it."""

    topic: str | None  # projects/P/topics/T: create the subscription if missing
    ack_deadline_seconds: int
    filter: str | None = None
    message_retention_seconds: int = 0  # 0: the service default (7 days)
    dead_letter_topic: str | None = None
    max_delivery_attempts: int = DEFAULT_ATTEMPTS
    exactly_once: bool = False
    delete_on_stop: bool = False
    # Ordering keys delivered in order (the topic's publishers must set them).
    ordering: bool = False
    # Acked messages kept for the retention window, so a seek to a time
    # (startingTimestamp) can go back over them.
    retain_acked: bool = False

    @staticmethod
    def parse(opts: Mapping[str, str], project: str | None, ack_deadline_seconds: int) -> SubscriptionSetup:
        raw_topic = text(opts, "topicId")
        if raw_topic is None:
            stray = [n for n in CREATE_ONLY if n.lower() in opts]
            if stray:
                raise OptionError(f"option {stray[0]} only applies when the source creates the subscription: "
                                  "set topicId too (the subscription is created on it if it does not exist)")
        topic = dlq = None
        try:
            if raw_topic:
                topic = topic_path(project, raw_topic)
            raw_dlq = (text(opts, "subscriptionDeadLetterTopicId") or "")
            if raw_dlq:
                dlq = topic_path(project, raw_dlq)
        except ValueError as e:
            raise OptionError(f"option topicId/subscriptionDeadLetterTopicId: {e}") from None
        if "maxdeliveryattempts" in opts and not dlq:
            raise OptionError("option maxDeliveryAttempts needs subscriptionDeadLetterTopicId (the topic that "
                              "receives messages delivered that many times)")
        return SubscriptionSetup(
            topic=topic,
            ack_deadline_seconds=ack_deadline_seconds,
            filter=text(opts, "filter"),
            # Not set: 0, the service's default.
            message_retention_seconds=_OPTIONS.value(opts, "messageRetentionSeconds") or 0,
            dead_letter_topic=dlq,
            max_delivery_attempts=_OPTIONS.value(opts, "maxDeliveryAttempts"),
            exactly_once=_OPTIONS.value(opts, "enableExactlyOnceDelivery"),
            delete_on_stop=_OPTIONS.value(opts, "deleteSubscriptionOnStreamStop"),
            ordering=_OPTIONS.value(opts, "enableMessageOrdering"),
            retain_acked=_OPTIONS.value(opts, "retainAckedMessages"),
        )


def ensure_subscription(subscription: str, setup: SubscriptionSetup | None, conn: ConnectionOptions) -> bool:
    """Creates the subscription on setup.topic if it does not exist; returns
    whether it was created. An existing one must be on the same topic."""
    from ....client import admin
    from ....errors import AlreadyExistsError, NotFoundError

    if setup is None or setup.topic is None:
        return False
    kw: dict[str, Any] = conn.client_kwargs()
    try:
        got = admin("get_subscription", subscription=subscription, **kw)
    except NotFoundError:
        got = None
    if got is not None:
        if got.get("topic") != setup.topic:
            raise OptionError(f"subscription {subscription} exists on topic {got.get('topic')}, not on "
                              f"topicId {setup.topic}; use another subscriptionId or drop topicId")
        log.info("subscription %s exists; its settings are left as they are", subscription)
        return False
    try:
        admin("create_subscription", subscription=subscription, topic=setup.topic,
              ack_deadline_seconds=setup.ack_deadline_seconds, filter=setup.filter,
              message_retention_seconds=setup.message_retention_seconds,
              dead_letter_topic=setup.dead_letter_topic,
              max_delivery_attempts=setup.max_delivery_attempts if setup.dead_letter_topic else 0,
              enable_exactly_once_delivery=setup.exactly_once, enable_message_ordering=setup.ordering,
              retain_acked_seconds=(setup.message_retention_seconds or DEFAULT_RETENTION_S)
              if setup.retain_acked else 0, **kw)
    except AlreadyExistsError:
        return False  # another query made it meanwhile
    except NotFoundError as e:
        raise OptionError(f"cannot create subscription {subscription}: topic {setup.topic} (or the dead-letter "
                          f"topic) does not exist ({e})") from None
    log.info("created subscription %s on %s", subscription, setup.topic)
    return True


def delete_subscription(subscription: str, setup: SubscriptionSetup | None, conn: ConnectionOptions) -> None:
    """deleteSubscriptionOnStreamStop: best effort, once the query stopped."""
    from ....client import admin
    from ....errors import NotFoundError

    if setup is None or not setup.delete_on_stop:
        return
    try:
        admin("delete_subscription", subscription=subscription, **conn.client_kwargs())
        log.info("deleted subscription %s (deleteSubscriptionOnStreamStop)", subscription)
    except NotFoundError:
        pass
    except Exception as e:
        log.warning("deleting subscription %s on stop failed: %s", subscription, e)
