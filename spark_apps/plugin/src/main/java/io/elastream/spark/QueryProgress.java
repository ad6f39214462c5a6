package io.elastream.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import java.util.Iterator;
import java.util.Map;

/**
 * One micro-batch's progress, read from Spark's own StreamingQueryProgress JSON (the same document every query's
 * listener gets): only the fields the policies need, so the rest of the plugin never touches Spark's classes.
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
        long offsetsBehind,
        long offsetsRead,
        int partitions) {

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
        long behind = 0;
        long read = 0;
        int partitions = 0;
        for (JsonNode source : p.path("sources")) {
            Offsets end = Offsets.of(source.get("endOffset"));
            Offsets latest = Offsets.of(source.get("latestOffset"));
            behind += latest.behind(end);
            read += end.behind(new Offsets(null));
            partitions += latest.partitions();
        }
        JsonNode eventTime = p.path("eventTime");
        return new QueryProgress(query, p.path("id").asText(""), p.path("batchId").asLong(), Instant.parse(p.get("timestamp").asText()),
                batchMillis(p) / 1000.0, p.path("numInputRows").asLong(0), finite(p.path("inputRowsPerSecond")),
                finite(p.path("processedRowsPerSecond")), instant(eventTime.get("min")),
                instant(eventTime.get("avg")), stateRows, stateBytes, behind, read, partitions);
    }

    /** When the batch committed: every record it read reached the sink then. */
    public Instant committedAt() {
        return triggeredAt.plusNanos((long) (batchSeconds * 1e9));
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

    /**
     * A source's offsets when they are {topic: {partition: offset}} (Kafka's, and any source that reports
     * partitioned offsets the same way), kept as JSON text or a JSON object in the progress.
     */
    private record Offsets(JsonNode byTopic) {
        static Offsets of(JsonNode node) {
            if (node == null || node.isNull()) {
                return new Offsets(null);
            }
            JsonNode tree = node;
            if (node.isTextual()) {
                try {
                    tree = JSON.readTree(node.asText());
                } catch (Exception e) {
                    return new Offsets(null);
                }
            }
            return new Offsets(tree != null && tree.isObject() ? tree : null);
        }

        int partitions() {
            int n = 0;
            for (JsonNode parts : topics()) {
                n += parts.size();
            }
            return n;
        }

        /** Offsets this one is ahead of `end`, summed over partitions (a partition `end` lacks counts from 0). */
        long behind(Offsets end) {
            long total = 0;
            if (byTopic == null) {
                return 0;
            }
            for (Iterator<Map.Entry<String, JsonNode>> t = byTopic.fields(); t.hasNext(); ) {
                Map.Entry<String, JsonNode> topic = t.next();
                if (!topic.getValue().isObject()) {
                    continue;
                }
                JsonNode endParts = end.byTopic == null ? null : end.byTopic.get(topic.getKey());
                for (Iterator<Map.Entry<String, JsonNode>> p = topic.getValue().fields(); p.hasNext(); ) {
                    Map.Entry<String, JsonNode> part = p.next();
                    long done = endParts == null ? 0 : endParts.path(part.getKey()).asLong(0);
                    total += Math.max(0, part.getValue().asLong(0) - done);
                }
            }
            return total;
        }

        private Iterable<JsonNode> topics() {
            if (byTopic == null) {
                return java.util.List.of();
            }
            java.util.List<JsonNode> out = new java.util.ArrayList<>();
            byTopic.forEach(v -> {
                if (v.isObject()) {
                    out.add(v);
                }
            });
            return out;
        }
    }
}
