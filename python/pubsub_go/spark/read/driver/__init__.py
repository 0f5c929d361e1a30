"""The driver: the stream reader Spark calls (stream.py) and what it keeps between
micro-batches (state.py): offsets, the batch log's entries, figures, the committer and
the lease keeper, and the subscription's setup and start position."""
