package io.pubsubgo.spark.source;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import org.apache.hadoop.conf.Configuration;

/** A Hadoop Configuration that travels to the tasks (for the batch log's FileSystem). */
final class SerializableConf implements Serializable {
  private static final long serialVersionUID = 1L;
  private transient Configuration conf;

  SerializableConf(Configuration conf) {
    this.conf = conf;
  }

  Configuration get() {
    return conf;
  }

  private void writeObject(ObjectOutputStream out) throws IOException {
    conf.write(out);
  }

  private void readObject(ObjectInputStream in) throws IOException {
    conf = new Configuration(false);
    conf.readFields(in);
  }
}
