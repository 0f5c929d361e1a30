"""Spark data source `pubsub-go`: the stream reader (source) and writers (sink)."""
