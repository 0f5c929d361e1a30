"""Each documented option (python/pubsub_go/_options.json, every row with a
doc_table) -> the test(s) that set it to a value other than its default
and would fail were it ignored or wired to the wrong place: through Spark
where Spark takes part in its effect, else at the Go boundary (the config
the front end hands the library, and what the library then does, seen by a
server). tests/test_option_coverage.py holds this table to the option
table and to the tests that exist: a new option needs an entry here, or a
reason in UNCOVERED.

A node id names a test function (its parametrized cases included)."""

from __future__ import annotations

WIRING = "tests/test_option_wiring.py"
PROTOBUF_FORMS = f"{WIRING}::test_protobuf_descriptor_and_encoding_options_decode_as_googles_parser_wrote"
CREATED = "tests/test_lifecycle.py::test_topic_id_creates_the_subscription_with_its_settings_and_deletes_it_on_stop"
SEEK = "tests/test_lifecycle.py::test_starting_timestamp_seeks_on_the_first_start_and_never_on_restart"
PROTOBUF_SOURCE = "tests/test_schema_mode.py::test_protobuf_source_text_derives_the_columns_and_decodes_as_decode_does"
ORDERS_AND_RETAINS = "tests/test_created_subscription.py::test_created_subscription_orders_and_retains_acked_messages"
# The JVM front end's admission control and byte flow control, through Spark 3.5 and 4.3.
JVM_BYTES = ("tests/test_jvm_front_end.py::test_max_bytes_per_trigger_bounds_every_micro_batch_and_available_now_still_"
             "reads_everything")
JVM_MIN = "tests/test_jvm_front_end.py::test_min_records_per_trigger_waits_up_to_max_trigger_delay_for_its_rows"
JVM_ACK = "tests/test_jvm_front_end.py::test_ack_on_commit_false_acks_what_a_task_read_though_spark_never_commits_it"
JVM_IDLE = "tests/test_jvm_front_end.py::test_subscriber_idle_ms_zero_gives_every_task_a_subscriber_of_its_own"
JVM_OUTSTANDING = "tests/test_jvm_front_end.py::test_max_outstanding_messages_bounds_each_task_and_nothing_is_lost"
JVM_CATCH_UP = ("tests/test_jvm_read_options.py::test_catch_up_streams_grow_a_task_behind_its_backlog_and_live_rows_"
                "close_them")
JVM_ID_WINDOW = ("tests/test_jvm_read_options.py::test_id_attribute_drops_republished_ids_across_restarts_and_forgets_"
                 "them_after_the_window")

SOURCE: dict[str, tuple[str, ...]] = {
    # Where and as whom
    # Short ids elsewhere take the same project as the tests' keys and environment: only this tells them apart.
    "projectId": (f"{WIRING}::test_project_id_is_the_project_of_short_ids",),
    "subscriptionId": ("tests/test_source.py::test_pass_through_count_and_sum_then_drained",),
    # Not the tests on Google's emulator: the environment names it too (PUBSUB_EMULATOR_HOST).
    "emulatorHost": (f"{WIRING}::test_streams_per_partition_opens_that_many_streams", PROTOBUF_SOURCE),
    "endpoint": ("tests/test_credentials.py::test_key_file_option_authenticates_every_call",),
    "credentials": ("tests/test_credentials.py::test_key_file_option_authenticates_every_call",),
    "credentialsJson": ("tests/test_credentials.py::test_spark_reads_and_writes_over_tls_with_inline_key",),
    "impersonateServiceAccount": ("tests/test_credentials.py::test_impersonation_options_take_the_targets_token",),
    "iamCredentialsEndpoint": ("tests/test_credentials.py::test_impersonation_options_take_the_targets_token",),
    # The subscription the source creates
    "topicId": (CREATED,),
    "filter": (CREATED,),
    "messageRetentionSeconds":
        (CREATED,
         ORDERS_AND_RETAINS),
    "subscriptionDeadLetterTopicId":
        (CREATED,),
    "maxDeliveryAttempts":
        (CREATED,),
    "enableExactlyOnceDelivery":
        (CREATED,),
    "enableMessageOrdering":
        (ORDERS_AND_RETAINS,),
    "retainAckedMessages":
        (ORDERS_AND_RETAINS,),
    "deleteSubscriptionOnStreamStop":
        (CREATED,),
    # Columns from attributes
    "attributeColumns": ("tests/test_source_attributes.py::test_attribute_columns_and_event_time",),
    "timestampAttribute": ("tests/test_source_attributes.py::test_attribute_columns_and_event_time",),
    "timestampColumn": ("tests/test_source_attributes.py::test_rows_without_an_event_time_are_counted",),
    "idAttribute": ("tests/test_source_attributes.py::test_id_attribute_drops_republished_ids_across_a_restart",
                    JVM_ID_WINDOW),
    # Where reading starts
    "startingTimestamp": (SEEK,),
    "startingSnapshot": ("tests/test_lifecycle.py::test_starting_snapshot",),
    # Tasks and micro-batches
    "streamsPerPartition": (f"{WIRING}::test_streams_per_partition_opens_that_many_streams",
                            f"{WIRING}::test_source_options_reach_the_subscriber_config_the_library_gets"),
    "catchUpStreamsPerPartition": (f"{WIRING}::test_catch_up_streams_grow_a_subscriber_behind_its_backlog",
                                   f"{WIRING}::test_source_options_reach_the_subscriber_config_the_library_gets",
                                   JVM_CATCH_UP),
    "batchSize": ("tests/test_pull.py::test_a_tasks_shorter_last_pull_does_not_shrink_the_next_tasks_batches",
                  f"{WIRING}::test_source_options_reach_the_subscriber_config_the_library_gets"),
    "maxWaitTimeMs": (f"{WIRING}::test_max_wait_time_is_how_long_a_streaming_task_waits_for_more",
                      f"{WIRING}::test_source_options_reach_the_subscriber_config_the_library_gets"),
    "maxRecordsPerPartition": ("tests/test_source.py::test_at_most_once_tasks_ack_and_tasks_take_max_records_each",),
    "maxRecordsPerTrigger": ("tests/test_source.py::test_admission_control_caps_rows_per_batch",
                             "tests/test_admission.py::test_the_stricter_of_two_trigger_limits_wins"),
    "maxBytesPerTrigger": ("tests/test_admission.py::test_the_stricter_of_two_trigger_limits_wins", JVM_BYTES),
    "minRecordsPerTrigger": ("tests/test_admission.py::test_min_records_waits_no_longer_than_max_trigger_delay",
                             JVM_MIN),
    "minBytesPerTrigger": ("tests/test_admission.py::test_min_bytes_waits_no_longer_than_max_trigger_delay",),
    "maxTriggerDelay": ("tests/test_admission.py::test_min_records_waits_no_longer_than_max_trigger_delay",
                        "tests/test_admission.py::test_min_bytes_waits_no_longer_than_max_trigger_delay", JVM_MIN),
    "drainBacklog": ("tests/compat/test_compat.py::test_drain_job_twice_on_one_checkpoint_is_exactly_once",),
    # Memory and flow control
    "maxOutstandingMessages": (f"{WIRING}::test_flow_control_bounds_what_a_subscriber_holds",
                               f"{WIRING}::test_source_options_reach_the_subscriber_config_the_library_gets",
                               JVM_OUTSTANDING),
    "maxWorkerMemoryBytes": (f"{WIRING}::test_flow_control_bounds_what_a_subscriber_holds",
                             "tests/test_pull.py::test_large_payloads_are_pulled_in_batches_of_bounded_bytes"),
    "maxBytesPerPartition": (f"{WIRING}::test_flow_control_bounds_what_a_subscriber_holds",
                             f"{WIRING}::test_source_options_reach_the_subscriber_config_the_library_gets", JVM_BYTES),
    # Leases and acks
    "ackDeadlineSeconds":
        (CREATED,
         f"{WIRING}::test_source_options_reach_the_subscriber_config_the_library_gets"),
    "ackOnCommit": (f"{WIRING}::test_ack_on_commit_false_acks_when_the_task_records_its_batch",
                    "tests/test_source.py::test_at_most_once_tasks_ack_and_tasks_take_max_records_each", JVM_ACK),
    "commitLeaseSeconds": (f"{WIRING}::test_commit_lease_is_the_deadline_a_recorded_batch_is_left_with",),
    # Schema mode
    "format": ("tests/test_schema_mode.py::test_json_columns_equal_spark_from_json",),
    "decoder": ("tests/test_schema_mode.py::test_hostile_decoder_is_stopped_and_the_session_carries_on",),
    "avroSchema": ("tests/test_schema_mode.py::test_avro_schema_derived_and_columns_equal_spark_from_avro",),
    "protobufMessage": (PROTOBUF_SOURCE,),
    "protobufSource": (PROTOBUF_SOURCE,),
    "schemaFrom": ("tests/test_topic_schema.py::test_binary_and_json_messages_decode_like_from_avro",),
    "onDecodeError": ("tests/test_schema_mode.py::test_column_and_fail_modes",),
    "errorColumn": ("tests/test_schema_mode.py::test_column_and_fail_modes",),
    "deadLetterTopicId": ("tests/test_schema_mode.py::test_malformed_records_go_to_the_dead_letter_topic",),
    "decoderTimeoutMs": ("tests/test_schema_mode.py::test_hostile_decoder_is_stopped_and_the_session_carries_on",),
    "decoderMemoryLimitMB": ("tests/test_schema_mode.py::test_hostile_decoder_is_stopped_and_the_session_carries_on",),
    "idAttributeWindowSeconds": (f"{WIRING}::test_id_attribute_window_is_how_long_a_delivered_id_is_remembered",
                                 JVM_ID_WINDOW),
    "maxBatchDurationMs": (f"{WIRING}::test_max_batch_duration_is_how_long_a_task_reads_on",),
    "schemaRevision": (f"{WIRING}::test_schema_revision_pins_the_columns_of_a_topic_schema",),
    "numPartitions": (f"{WIRING}::test_num_partitions_and_max_records_plan_the_tasks_of_a_micro_batch",),
    "quietPeriodMs": (f"{WIRING}::test_quiet_period_is_how_long_an_empty_backlog_must_stay_quiet",),
    "subscriberIdleMs": (f"{WIRING}::test_subscriber_idle_ms_is_how_long_a_worker_keeps_a_tasks_subscriber", JVM_IDLE),
    "batchLogLocation": (f"{WIRING}::test_the_batch_log_is_where_batch_log_location_says",),
    "decoderOptions": (f"{WIRING}::test_decoder_options_reach_the_decoder",),
    "protobufDescriptorFile": (PROTOBUF_FORMS,),
    "protobufDescriptorSet": (PROTOBUF_FORMS,),
    "protobufEncoding": (PROTOBUF_FORMS,),
    "protobufRecursiveDepth": (f"{WIRING}::test_protobuf_recursive_depth_is_how_deep_the_derived_columns_recur",),
    # The config only: wazero and wasmtime give the same results by design.
    "decoderEngine": (f"{WIRING}::test_decoder_engine_picks_what_runs_the_module",),
}

SINK: dict[str, tuple[str, ...]] = {
    "topicId": ("tests/test_sink.py::test_write_reports_what_the_server_acknowledged",),
    "projectId": (f"{WIRING}::test_project_id_is_the_project_of_short_ids",),
    "emulatorHost": (f"{WIRING}::test_batch_limits_split_the_publish_requests",),
    "endpoint": ("tests/test_credentials.py::test_key_file_option_authenticates_every_call",),
    "credentials": ("tests/test_credentials.py::test_key_file_option_authenticates_every_call",),
    "credentialsJson": ("tests/test_credentials.py::test_spark_reads_and_writes_over_tls_with_inline_key",),
    "impersonateServiceAccount": ("tests/test_credentials.py::test_impersonation_options_take_the_targets_token",),
    "iamCredentialsEndpoint": ("tests/test_credentials.py::test_impersonation_options_take_the_targets_token",),
    "batchMaxMessages": (f"{WIRING}::test_batch_limits_split_the_publish_requests",
                         f"{WIRING}::test_sink_options_reach_the_publisher_config_the_library_gets"),
    "batchMaxBytes": (f"{WIRING}::test_batch_limits_split_the_publish_requests",
                      f"{WIRING}::test_sink_options_reach_the_publisher_config_the_library_gets"),
    "lingerMs": (f"{WIRING}::test_linger_holds_a_small_batch_until_it_runs_out",
                 f"{WIRING}::test_sink_options_reach_the_publisher_config_the_library_gets"),
    "maxInFlightBytes": (f"{WIRING}::test_max_in_flight_bytes_holds_publishes_back_until_acknowledged",
                         f"{WIRING}::test_sink_options_reach_the_publisher_config_the_library_gets"),
    "enableMessageOrdering": ("tests/test_sink.py::test_make_writer_checks_mode_and_ordering",
                              f"{WIRING}::test_sink_options_reach_the_publisher_config_the_library_gets"),
    "idAttribute": ("tests/test_sink.py::test_write_reports_what_the_server_acknowledged",),
    "retryTimeoutMs": (f"{WIRING}::test_retry_timeout_bounds_how_long_a_failing_request_is_retried",
                       f"{WIRING}::test_sink_options_reach_the_publisher_config_the_library_gets"),
    "publishTimeoutMs": (f"{WIRING}::test_publish_timeout_bounds_a_tasks_wait_for_acknowledgements",),
    "timestampAttribute": ("tests/test_sink_routing.py::test_rows_routed_by_topic_column_each_once_with_event_time",),
    "compression": (f"{WIRING}::test_compression_gzips_requests_from_its_threshold",),
    "compressionBytesThreshold": (f"{WIRING}::test_compression_gzips_requests_from_its_threshold",
                                  f"{WIRING}::test_sink_options_reach_the_publisher_config_the_library_gets"),
    "schemaFrom": ("tests/test_topic_schema.py::test_sink_encodes_rows_to_the_topics_avro_schema",),
    "schemaRevision": ("tests/test_topic_schema.py::test_sink_encodes_to_the_newest_or_the_pinned_revision",),
    "timestampColumn": (f"{WIRING}::test_sink_timestamp_column_is_the_event_time_it_publishes",),
    "publisherIdleMs": ("tests/test_publisher_pool.py::test_publisher_idle_ms_zero_closes_after_every_task",
                        f"{WIRING}::test_sink_options_reach_the_publisher_config_the_library_gets"),
}

# Documented options no test yet sets and observes, each with why: the
# coverage test reports them (and fails on an option in neither table).
UNCOVERED: dict[str, dict[str, str]] = {
    "source": {},
    "sink": {},
}
