package io.elastream.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * One micro-batch's progress, read from Spark's own StreamingQueryProgress JSON (the same document every query's
 * listener gets): only the fields the policies need, so the rest of the plugin never touches Spark's classes.
 * Offsets are read where a source reports them as {topic: {partition: offset}} (Kafka's, and any source that
 * reports partitioned offsets the same way).
 */
public record QueryProgress(
        String query,
        String id,
        long batchId,
        Instant triggeredAt,
        double batchSeconds,
        long inputRows,
        double inputRate,
        double processingRate,
        Instant eventTimeMin,
        Instant eventTimeAvg,
        long stateRows,
        long stateBytes,
        Map<String, Map<Integer, Long>> endOffsets,
        Map<String, Map<Integer, Long>> latestOffsets) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Parses StreamingQueryProgress.json(); IllegalArgumentException when it is not one. */
    public static QueryProgress parse(String json) {
        JsonNode p;
        try {
            p = JSON.readTree(json);
        } catch (Exception e) {
            throw new IllegalArgumentException("not a query progress: " + e.getMessage(), e);
        }
        if (p == null || !p.hasNonNull("timestamp") || !p.hasNonNull("batchId")) {
            throw new IllegalArgumentException("not a query progress: no timestamp or batchId");
        }
        String name = p.path("name").asText("");
        String query = name.isEmpty() || "null".equals(name) ? p.path("id").asText("unnamed") : name;
        long stateRows = 0;
        long stateBytes = 0;
        for (JsonNode op : p.path("stateOperators")) {
            stateRows += op.path("numRowsTotal").asLong(0);
            stateBytes += op.path("memoryUsedBytes").asLong(0);
        }
        Map<String, Map<Integer, Long>> end = new HashMap<>();
        Map<String, Map<Integer, Long>> latest = new HashMap<>();
        for (JsonNode source : p.path("sources")) {
            addOffsets(source.get("endOffset"), end);
            addOffsets(source.get("latestOffset"), latest);
        }
        JsonNode eventTime = p.path("eventTime");
        return new QueryProgress(query, p.path("id").asText(""), p.path("batchId").asLong(),
                Instant.parse(p.get("timestamp").asText()), batchMillis(p) / 1000.0, p.path("numInputRows").asLong(0),
                finite(p.path("inputRowsPerSecond")), finite(p.path("processedRowsPerSecond")),
                instant(eventTime.get("min")), instant(eventTime.get("avg")), stateRows, stateBytes, end, latest);
    }

    /** When the batch committed: every record it read reached the sink then. */
    public Instant committedAt() {
        return triggeredAt.plusNanos((long) (batchSeconds * 1e9));
    }

    /** Offsets behind the latest as the batch was planned, summed over partitions. */
    public long offsetsBehind() {
        return behind(latestOffsets, endOffsets);
    }

    /** The batch's end offsets, summed (Kafka: the records read, for topics that start at 0). */
    public long offsetsRead() {
        return behind(endOffsets, Map.of());
    }

    public int partitions() {
        return latestOffsets.values().stream().mapToInt(Map::size).sum();
    }

    /** How far `ahead` is past `end`, summed over ahead's partitions (one that `end` lacks counts from 0). */
    public static long behind(Map<String, Map<Integer, Long>> ahead, Map<String, Map<Integer, Long>> end) {
        long total = 0;
        for (Map.Entry<String, Map<Integer, Long>> topic : ahead.entrySet()) {
            Map<Integer, Long> done = end.getOrDefault(topic.getKey(), Map.of());
            for (Map.Entry<Integer, Long> part : topic.getValue().entrySet()) {
                total += Math.max(0, part.getValue() - done.getOrDefault(part.getKey(), 0L));
            }
        }
        return total;
    }

    private static void addOffsets(JsonNode node, Map<String, Map<Integer, Long>> into) {
        JsonNode tree = node;
        if (node != null && node.isTextual()) {  // Spark writes offsets it cannot parse as JSON text
            try {
                tree = JSON.readTree(node.asText());
            } catch (Exception e) {
                return;
            }
        }
        if (tree == null || !tree.isObject()) {
            return;
        }
        for (Iterator<Map.Entry<String, JsonNode>> t = tree.fields(); t.hasNext(); ) {
            Map.Entry<String, JsonNode> topic = t.next();
            if (!topic.getValue().isObject()) {
                continue;  // e.g. the generator's {"seq": n}: no partitions
            }
            for (Iterator<Map.Entry<String, JsonNode>> p = topic.getValue().fields(); p.hasNext(); ) {
                Map.Entry<String, JsonNode> part = p.next();
                try {
                    into.computeIfAbsent(topic.getKey(), k -> new HashMap<>())
                            .put(Integer.parseInt(part.getKey()), part.getValue().asLong(0));
                } catch (NumberFormatException e) {
                    // not a partition number: not offsets we can read
                }
            }
        }
    }

    private static long batchMillis(JsonNode p) {
        if (p.hasNonNull("batchDuration")) {
            return p.get("batchDuration").asLong();
        }
        return p.path("durationMs").path("triggerExecution").asLong(0);  // Spark 3.5 has no batchDuration
    }

    private static double finite(JsonNode n) {
        double v = n.asDouble(0.0);  // "NaN" and "Infinity" come as strings
        return Double.isFinite(v) ? v : 0.0;
    }

    private static Instant instant(JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        try {
            return Instant.parse(n.asText());
        } catch (RuntimeException e) {
            return null;
        }
    }
}
