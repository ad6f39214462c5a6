package io.elastream.spark;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;

/**
 * The metrics the policies read, per streaming query and for the driver, under the names elastream's runner has
 * always exported (docs/spark_apps.md), so the operator's default PromQL reads a plugin-instrumented driver
 * unchanged.
 */
public final class StreamingMetrics {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(StreamingMetrics.class);
    private final String app;
    private final ExecutorPool executors;  // null: this driver's executors are not elastream's to count
    private final LatestOffsets source;  // null: backlog as the last batch was planned
    private final Map<String, QueryState> queries = new ConcurrentHashMap<>();
    private final Map<String, String> names = new ConcurrentHashMap<>();  // query id -> the `query` label

    public StreamingMetrics(String app, ExecutorPool executors) {
        this(app, executors, null);
    }

    public StreamingMetrics(String app, ExecutorPool executors, LatestOffsets source) {
        this.app = app;
        this.executors = executors;
        this.source = source;
    }

    public void onStarted(String id, String name) {
        names.put(id, name == null || name.isEmpty() ? id : name);
    }

    public void onProgress(QueryProgress progress) {
        names.put(progress.id(), progress.query());
        queries.computeIfAbsent(progress.query(), q -> new QueryState()).update(progress);
    }

    /** The query waits for data (Spark's QueryIdleEvent): nothing arrives, nothing is processed. */
    public void onIdle(String id, java.time.Instant at) {
        QueryState state = queries.get(names.getOrDefault(id, id));
        if (state != null) {
            state.idle(at);
        }
    }

    /** A stopped query's series go with it: its last values would otherwise read as a live job's forever. */
    public void forgetRun(String id) {
        String query = names.remove(id);
        if (query != null) {
            queries.remove(query);
        }
    }

    public String render() {
        Map<String, QueryState.Snapshot> now = new TreeMap<>();
        queries.forEach((q, s) -> {
            QueryState.Snapshot snap = s.snapshot();
            if (snap != null) {
                now.put(q, snap);
            }
        });
        Map<String, Long> behind = backlog(now);
        Exposition e = new Exposition();
        gauge(e, now, "elastream_input_rate", "records/s offered to the query (Spark inputRowsPerSecond; 0 "
                + "while the query is idle)", s -> s.idle() ? 0.0 : s.last().inputRate());
        gauge(e, now, "elastream_processing_rate", "records/s processed (Spark processedRowsPerSecond)",
                s -> s.last().processingRate());
        gauge(e, now, "elastream_batch_duration_seconds", "duration of the last micro-batch (0 while the query is "
                + "idle)", s -> s.idle() ? 0.0 : s.last().batchSeconds());
        gauge(e, now, "elastream_trigger_interval_seconds", "seconds between the starts of the last two "
                + "micro-batches (the trigger interval while the query keeps up)", QueryState.Snapshot::interval);
        gauge(e, now, "elastream_latency_p50_seconds", "end-to-end latency, event time to sink, median",
                snap -> snap.latencyP50(behind.get(snap.last().query())));
        gauge(e, now, "elastream_latency_p99_seconds", "end-to-end latency, event time to sink, 99th pct",
                snap -> snap.latencyP99(behind.get(snap.last().query())));
        gauge(e, now, "elastream_latency_measured", "1: latency from the batch's event times (a watermark); 0: "
                + "estimated from the batches' timing", s -> s.latencyMeasured() ? 1 : 0);
        gauge(e, now, "elastream_state_rows", "rows in the state stores", s -> s.last().stateRows());
        gauge(e, now, "elastream_state_bytes", "memory used by the state stores", s -> s.last().stateBytes());
        gauge(e, now, "elastream_batch_id", "id of the last completed micro-batch", s -> s.last().batchId());
        gauge(e, now, "elastream_backlog_records", "records offered but not yet read: offsets behind the latest, "
                + "summed over partitions (the broker's now where the plugin can ask it, else as the last batch was "
                + "planned)", snap -> behind.get(snap.last().query()));
        gauge(e, now, "elastream_source_end_offsets", "the last batch's end offsets, summed over partitions (Kafka: "
                + "the records read, for topics that start at offset 0)", s -> s.last().offsetsRead());
        Map<String, QueryState.Snapshot> partitioned = new TreeMap<>(now);
        partitioned.values().removeIf(s -> s.last().partitions() == 0);
        gauge(e, partitioned, "elastream_source_partitions", "partitions the query's sources read: at most that "
                + "many read tasks per batch", s -> s.last().partitions());
        counter(e, now, "elastream_records_processed", "records read by completed batches", s -> s.records());
        counter(e, now, "elastream_batches", "completed micro-batches", s -> s.batches());
        if (executors != null) {
            executorFamilies(e);
        }
        return e.toString();
    }

    /**
     * Per query, the offsets its last batch ended at behind the source's latest: asked of the source now where the
     * plugin can (a batch running long is falling behind already), else as the last batch was planned.
     */
    private Map<String, Long> backlog(Map<String, QueryState.Snapshot> now) {
        Map<String, Long> out = new HashMap<>();
        now.forEach((q, snap) -> out.put(q, snap.last().offsetsBehind()));
        if (source == null) {
            return out;
        }
        Map<String, Set<Integer>> wanted = new HashMap<>();
        now.values().forEach(snap -> snap.last().latestOffsets().forEach((topic, parts) ->
                wanted.computeIfAbsent(topic, t -> new HashSet<>()).addAll(parts.keySet())));
        if (wanted.isEmpty()) {
            return out;
        }
        try {
            Map<String, Map<Integer, Long>> latest = source.latest(wanted);
            now.forEach((q, snap) -> {
                Map<String, Map<Integer, Long>> mine = new HashMap<>();
                snap.last().latestOffsets().keySet().forEach(t -> mine.put(t, latest.getOrDefault(t, Map.of())));
                out.put(q, Math.max(QueryProgress.behind(mine, snap.last().endOffsets()), snap.last().offsetsBehind()));
            });
        } catch (RuntimeException e) {  // unreachable for now: the offsets the last batch saw
            LOG.debug("elastream: latest offsets unavailable: {}", e.toString());
        }
        return out;
    }

    private void executorFamilies(Exposition e) {
        e.family("elastream_executors", "gauge", "executors registered with the driver")
                .sample("elastream_executors", Exposition.labels("app", app), executors.current());
        e.family("elastream_executor_target", "gauge", "executors asked for")
                .sample("elastream_executor_target", Exposition.labels("app", app), executors.target());
        String name = "elastream_executor_task_seconds";
        e.family(name + "_total", "counter", "task time each executor has run (its load in cores, as a rate)");
        new TreeMap<>(executors.taskSeconds()).forEach((id, seconds) ->
                e.sample(name + "_total", Exposition.labels("app", app, "executor", id), seconds));
    }

    private void gauge(Exposition e, Map<String, QueryState.Snapshot> now, String name, String help,
                       ToDoubleFunction<QueryState.Snapshot> value) {
        if (now.isEmpty()) {
            return;
        }
        e.family(name, "gauge", help);
        now.forEach((q, s) -> e.sample(name, Exposition.labels("app", app, "query", q), value.applyAsDouble(s)));
    }

    private void counter(Exposition e, Map<String, QueryState.Snapshot> now, String name, String help,
                         ToDoubleFunction<QueryState.Snapshot> value) {
        if (now.isEmpty()) {
            return;
        }
        e.family(name + "_total", "counter", help);
        now.forEach((q, s) -> e.sample(name + "_total", Exposition.labels("app", app, "query", q),
                value.applyAsDouble(s)));
    }
}
