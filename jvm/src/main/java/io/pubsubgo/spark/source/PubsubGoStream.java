package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.CompositeReadLimit;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.ReportsSourceMetrics;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;

/**
 * The driver's side of a streaming read: plans each micro-batch (tasks and
 * their row caps), acks at commit (LeaseKeeper), ends AvailableNow once
 * every task of a batch found the backlog empty, and reports the last
 * batch's figures. Pub/Sub has no offsets: an offset is a batch number
 * with how it was planned; the batch log holds what each batch read.
 */
final class PubsubGoStream implements MicroBatchStream, SupportsAdmissionControl, SupportsTriggerAvailableNow,
    ReportsSourceMetrics {
  private final SourceOptions opts;
  private final BatchLog log;
  private final String logDir;
  private final SerializableConf conf;
  private final int partitions;
  private final SchemaPlan plan; // schema mode; null: raw mode
  private final Path commits; // Spark's commit log; null: unknown
  private final Configuration hadoopConf;
  private LeaseKeeper keeper;
  private long cutoffUs;          // AvailableNow: messages published later are left for the next run
  private long plannedThisRun = -1;
  private final Map<String, String> lastFigures = new HashMap<>();

  PubsubGoStream(SourceOptions opts, String checkpointLocation) {
    this(opts, checkpointLocation, null);
  }

  PubsubGoStream(SourceOptions opts, String checkpointLocation, SchemaPlan plan) {
    this.opts = opts;
    this.plan = plan;
    SparkSession spark = SparkSession.active();
    Configuration hc = spark.sessionState().newHadoopConf();
    this.logDir = opts.batchLogLocation != null ? opts.batchLogLocation
        : new Path(checkpointLocation, "pubsub-go-batchlog").toString();
    this.conf = new SerializableConf(hc);
    this.log = new BatchLog(logDir, hc);
    // Spark's commit log: <checkpointLocation>/commits beside the sources/<n> directory Spark gives this source.
    Path sources = new Path(checkpointLocation).getParent();
    this.commits = sources == null || sources.getParent() == null ? null : new Path(sources.getParent(), "commits");
    this.hadoopConf = hc;
    this.partitions = opts.numPartitions > 0 ? opts.numPartitions : spark.sparkContext().defaultParallelism();
  }

  private synchronized LeaseKeeper keeper() {
    if (keeper == null) {
      opts.setup.ensure(opts); // topicId only; before the acker opens the subscription
      keeper = new LeaseKeeper(log, opts.ackerConfig(), opts.commitLeaseSeconds, opts.ackOnCommit);
    }
    return keeper;
  }

  @Override
  public Offset initialOffset() {
    keeper(); // fails fast: NOT_FOUND for an unknown subscription
    // Spark asks for the initial offset only when the checkpoint has none: a restart never seeks again.
    opts.setup.seekOnFirstStart(opts);
    return new PubsubGoOffset(-1, partitions, 0);
  }

  @Override
  public Offset deserializeOffset(String json) {
    return PubsubGoOffset.parse(json);
  }

  /**
   * Spark's limits where it has them (maxRows, minRows with the delay, as
   * Kafka's source gives them). Spark 3.5 has no byte limit and no byte
   * minimum, so the batch's are applied here from the options; a byte
   * limit alone still gives Spark a limit (maxRows of Long.MAX_VALUE), so
   * that Spark's ReadAllAvailable (Trigger.Once) can be told from it.
   */
  @Override
  public ReadLimit getDefaultReadLimit() {
    java.util.List<ReadLimit> out = new java.util.ArrayList<>();
    if (opts.minRecordsPerTrigger != null || opts.minBytesPerTrigger != null) {
      out.add(ReadLimit.minRows(opts.minRecordsPerTrigger != null ? opts.minRecordsPerTrigger : 1,
          opts.maxTriggerDelayMs));
    }
    if (opts.maxRecordsPerTrigger != null || opts.maxBytesPerTrigger != null) {
      out.add(ReadLimit.maxRows(opts.maxRecordsPerTrigger != null ? opts.maxRecordsPerTrigger : Long.MAX_VALUE));
    }
    if (out.isEmpty()) {
      return ReadLimit.allAvailable();
    }
    return out.size() == 1 ? out.get(0) : ReadLimit.compositeLimit(out.toArray(new ReadLimit[0]));
  }

  /** The row limit in Spark's limit (ReadMaxRows, alone or in a composite), or NO_LIMIT. */
  private static long maxRows(ReadLimit limit) {
    if (limit instanceof ReadMaxRows) {
      long n = ((ReadMaxRows) limit).maxRows();
      return n == Long.MAX_VALUE ? PubsubGoOffset.NO_LIMIT : n;
    }
    if (limit instanceof CompositeReadLimit) {
      for (ReadLimit l : ((CompositeReadLimit) limit).getReadLimits()) {
        if (l instanceof ReadMaxRows) {
          return maxRows(l);
        }
      }
    }
    return PubsubGoOffset.NO_LIMIT;
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    cutoffUs = System.currentTimeMillis() * 1000;
  }

  @Override
  public Offset latestOffset() {
    throw new UnsupportedOperationException("pubsub-go: latestOffset(start, limit) is the entry point");
  }

  @Override
  public synchronized Offset latestOffset(Offset startOffset, ReadLimit limit) {
    keeper(); // the driver's acker and lease renewal, from the first batch on
    PubsubGoOffset start = (PubsubGoOffset) startOffset;
    if (cutoffUs > 0 && plannedThisRun == start.batch && backlogRead(start.batch)) {
      return start; // AvailableNow: every task of the last batch found the backlog empty
    }
    plannedThisRun = start.batch + 1;
    long rows = maxRows(limit);
    PubsubGoOffset next = rows != PubsubGoOffset.NO_LIMIT
        ? PubsubGoOffset.limited(start.batch + 1, partitions, opts.maxRecordsPerPartition, rows)
        : new PubsubGoOffset(start.batch + 1, partitions, opts.maxRecordsPerPartition);
    if (limit instanceof ReadAllAvailable) {
      return next; // Trigger.Once: everything there, whatever the options' limits
    }
    next.bytes(opts.maxBytesPerTrigger != null ? opts.maxBytesPerTrigger : PubsubGoOffset.NO_LIMIT);
    if (cutoffUs == 0) { // AvailableNow reads what is there: no minimum to wait for
      next.minimum(opts.minRecordsPerTrigger != null ? opts.minRecordsPerTrigger : PubsubGoOffset.NO_LIMIT,
          opts.minBytesPerTrigger != null ? opts.minBytesPerTrigger : PubsubGoOffset.NO_LIMIT,
          System.currentTimeMillis() + opts.maxTriggerDelayMs);
    }
    return next;
  }

  /** True when every entry of the batch reports the backlog drained; keeps its figures. */
  private boolean backlogRead(long batch) {
    try {
      boolean all = true;
      int n = 0;
      for (Path e : log.entries(batch)) {
        JsonNode s = new ObjectMapper().readTree(log.acks(e).summary);
        all &= s.path("drained").asBoolean(false);
        n++;
      }
      return n > 0 && all;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start, Offset end) {
    PubsubGoOffset e = (PubsubGoOffset) end;
    String cfg = opts.subscriberConfig(e.rowsPerPartition, cutoffUs);
    SchemaMode mode = plan == null ? null : plan.task(opts);
    if (plan != null) {
      cfg = plan.subscriberConfig(cfg);
    }
    InputPartition[] out = new InputPartition[e.partitions];
    for (int i = 0; i < e.partitions; i++) {
      out[i] = new PubsubGoPartition(e.batch, i, cfg, logDir, conf, e.rowsOf(i), opts.batchSize,
          opts.maxBatchDurationMs, opts.maxWaitTimeMs, opts.quietPeriodMs, cutoffUs > 0, opts.commitLeaseSeconds);
      ((PubsubGoPartition) out[i]).admit(e.shareOf(e.bytes, i), e.minRowsOf(i), e.shareOf(e.minBytes, i),
          e.waitUntilMs);
      ((PubsubGoPartition) out[i]).ackOnCommit = opts.ackOnCommit;
      ((PubsubGoPartition) out[i]).subscriberIdleMs = opts.subscriberIdleMs;
      ((PubsubGoPartition) out[i]).streamsPerPartition = opts.streamsPerPartition;
      ((PubsubGoPartition) out[i]).idWindow = opts.idWindow;
      ((PubsubGoPartition) out[i]).schemaMode = mode;
      ((PubsubGoPartition) out[i]).derived = opts.derived;
    }
    return out;
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new PubsubGoReaderFactory();
  }

  @Override
  public void commit(Offset end) {
    PubsubGoOffset e = (PubsubGoOffset) end;
    try {
      keeper().commit(e.batch);
    } catch (IOException ex) {
      throw new UncheckedIOException("pubsub-go: acking batch " + e.batch + " (retried at the next commit): "
          + ex.getMessage(), ex);
    }
  }

  /** The batch's figures, summed over its tasks (read before Spark commits it). */
  private Map<String, String> summarize(long batch) throws IOException {
    Map<String, Long> sums = new HashMap<>();
    int drained = 0;
    int tasks = 0;
    for (Path p : log.entries(batch)) {
      JsonNode s = new ObjectMapper().readTree(log.acks(p).summary);
      tasks++;
      if (s.path("drained").asBoolean(false)) {
        drained++;
      }
      s.fields().forEachRemaining(f -> {
        if (f.getValue().isNumber()) {
          sums.merge(f.getKey(), f.getValue().asLong(), Long::sum);
        }
      });
    }
    Map<String, String> out = new HashMap<>();
    out.put("batch", Long.toString(batch));
    out.put("tasks", Integer.toString(tasks));
    out.put("tasksDrained", Integer.toString(drained));
    sums.forEach((k, v) -> out.put(k, Long.toString(v)));
    return out;
  }

  /**
   * The figures of the batch just run (Spark asks before it commits the
   * batch, so its entries are still in the log): rows, tasks that found
   * the backlog empty, and the subscribers' counters summed over tasks.
   */
  @Override
  public Map<String, String> metrics(Optional<Offset> latestConsumedOffset) {
    if (!latestConsumedOffset.isPresent()) {
      return new HashMap<>();
    }
    Offset o = latestConsumedOffset.get();
    long batch = (o instanceof PubsubGoOffset ? (PubsubGoOffset) o : PubsubGoOffset.parse(o.json())).batch;
    synchronized (lastFigures) {
      if (!Long.toString(batch).equals(lastFigures.get("batch"))) {
        try {
          Map<String, String> m = summarize(batch);
          if (!"0".equals(m.get("tasks"))) {
            lastFigures.clear();
            lastFigures.putAll(m);
          }
        } catch (IOException e) {
          return new HashMap<>(); // figures only; the batch itself is unaffected
        }
      }
      return new HashMap<>(lastFigures);
    }
  }

  @Override
  public String toString() {
    return "pubsub-go[" + opts.subscription + "]";
  }

  /**
   * Spark commits a batch to its source only when it plans the next one,
   * so the last batch of a run (AvailableNow's, a stopped query's) is in
   * Spark's commit log but was never committed here: acked now, its rows
   * would otherwise stay leased for commitLeaseSeconds and then come again.
   * Spark's batch ids are this source's batch numbers (one per planned batch).
   */
  private void ackLastCommitted(LeaseKeeper k) {
    long last = plannedThisRun;
    if (last < 0 || commits == null) {
      return;
    }
    try {
      if (commits.getFileSystem(hadoopConf).exists(new Path(commits, Long.toString(last)))) {
        k.commit(last);
      }
    } catch (IOException | RuntimeException e) {
      // Acked at the next run's first commit instead, or redelivered after the lease.
      System.err.println("pubsub-go: acking the run's last batch " + last + " at stop failed: " + e);
    }
  }

  @Override
  public void stop() {
    LeaseKeeper k;
    synchronized (this) {
      k = keeper;
      keeper = null;
    }
    if (k != null) {
      try {
        ackLastCommitted(k);
      } finally {
        k.close();
      }
    }
    opts.setup.deleteOnStop(opts); // if asked
  }
}
