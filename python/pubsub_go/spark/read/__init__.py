"""The source, by the process each module runs in: options/ (parsed on the driver, pickled to the tasks),
driver/ (the stream reader Spark calls and the state it keeps between micro-batches), task/ (a Spark task on
an executor: replay or pull and record) and batchlog/ (written by the tasks, read by both)."""
