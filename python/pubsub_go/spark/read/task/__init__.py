"""The Spark task on an executor: one partition's pull loop (run.py, pull.py), its
subscriber (subscriber_config.py, subscriber_pool.py), dead letters and the id window."""
