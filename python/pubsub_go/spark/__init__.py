"""Spark data source `pubsub-go`: provider.py, the source (read/) and the sink (write/)."""
