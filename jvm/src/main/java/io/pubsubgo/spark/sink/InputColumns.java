package io.pubsubgo.spark.sink;

import java.io.Serializable;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Where the sink's input columns are in a row (docs/sink.md, "Input
 * columns"), checked on the driver before any task runs: any other column,
 * a wrong type, a missing payload or an ordering_key without
 * enableMessageOrdering fails with what is accepted.
 */
final class InputColumns implements Serializable {
  private static final long serialVersionUID = 1L;
  static final String ACCEPTED = "payload (binary or string, required), attributes (map<string,string>), "
      + "ordering_key (string, with enableMessageOrdering=true), topic (string: routes the row), and with timestampAttribute its timestampColumn "
      + "(timestamp); project your data first, e.g. selectExpr(\"to_json(struct(*)) AS payload\")";

  int payload = -1;
  boolean payloadIsString;
  int attributes = -1;
  int orderingKey = -1;
  int time = -1;
  /** schemaFrom=topic: the columns encoded into the payload (all but the message's own), and where they are. */
  StructType recordFields;
  int[] recordOrdinals;
  /** The topic column: each row goes to the topic it names (a null to topicId). */
  int topic = -1;
  String timeName;

  /** Whether the input has a topic column, which makes topicId optional (SinkOptions). */
  static boolean routed(StructType schema) {
    for (StructField f : schema.fields()) {
      if ("topic".equals(f.name())) {
        return true;
      }
    }
    return false;
  }

  InputColumns(StructType schema, SinkOptions opts) {
    StructField[] fields = schema.fields();
    java.util.List<StructField> record = new java.util.ArrayList<>();
    java.util.List<Integer> ordinals = new java.util.ArrayList<>();
    for (int i = 0; i < fields.length; i++) {
      String name = fields[i].name();
      DataType t = fields[i].dataType();
      if ("payload".equals(name) && opts.schemaFromTopic) {
        throw new IllegalArgumentException("pubsub-go: column 'payload' does not go with schemaFrom=topic, which "
            + "encodes the other columns into the payload (drop it, or drop schemaFrom to write payload as it is)");
      } else if ("payload".equals(name) && (t instanceof BinaryType || t instanceof StringType)) {
        payload = i;
        payloadIsString = t instanceof StringType;
      } else if ("attributes".equals(name) && t instanceof MapType
          && ((MapType) t).keyType() instanceof StringType && ((MapType) t).valueType() instanceof StringType) {
        attributes = i;
      } else if ("ordering_key".equals(name) && t instanceof StringType) {
        if (!opts.enableMessageOrdering) {
          throw new IllegalArgumentException("pubsub-go: the input has an ordering_key column, which needs "
              + "option enableMessageOrdering=true (and a subscription with message ordering to keep the order)");
        }
        orderingKey = i;
      } else if (opts.timestampAttribute != null && name.equals(opts.timestampColumn)
          && (t instanceof TimestampType || t instanceof TimestampNTZType)) {
        time = i;
        timeName = name;
      } else if ("topic".equals(name) && t instanceof StringType) {
        topic = i;
      } else if (opts.schemaFromTopic) {
        // A field of the topic schema's record: the driver checks it against the schema (SinkOptions).
        if (!RecordColumns.supported(t)) {
          throw new IllegalArgumentException("pubsub-go: the input column " + name + " (" + t.simpleString()
              + ") cannot be encoded with schemaFrom=topic: the JVM sink encodes boolean, integer, float, "
              + "double, decimal, string, binary, date, timestamp columns and arrays, maps and structs of them");
        }
        record.add(fields[i]);
        ordinals.add(i);
      } else {
        throw new IllegalArgumentException("pubsub-go: the input column " + name + " (" + t.simpleString()
            + ") is not accepted; the sink takes " + ACCEPTED);
      }
    }
    if (opts.schemaFromTopic) {
      recordFields = new StructType(record.toArray(new StructField[0]));
      recordOrdinals = new int[ordinals.size()];
      for (int i = 0; i < recordOrdinals.length; i++) {
        recordOrdinals[i] = ordinals.get(i);
      }
    } else if (payload < 0) {
      throw new IllegalArgumentException("pubsub-go: the input has no payload column; the sink takes " + ACCEPTED);
    }
    if (opts.timestampAttribute != null && time < 0) {
      throw new IllegalArgumentException("pubsub-go: timestampAttribute " + opts.timestampAttribute
          + " needs a timestamp column " + opts.timestampColumn + " in the input");
    }
  }
}
