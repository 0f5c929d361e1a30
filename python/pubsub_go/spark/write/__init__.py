"""The sink: Arrow writers for df.write and df.writeStream (writer.py), built from options.py."""
