"""The source: the stream reader on the driver (stream.py, driver.py) and the tasks on executors (task.py)."""
