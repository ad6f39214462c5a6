package io.elastream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class StreamingMetricsTest {
    /** A Kafka query's progress as Spark 4 writes it (offsets as JSON objects), batch `id` triggered at `at`. */
    static String kafkaProgress(long id, String at, long durationMs, String eventTime) {
        return "{\"id\":\"q-1\",\"runId\":\"r-1\",\"name\":\"counts\",\"timestamp\":\"" + at + "\",\"batchId\":" + id
                + ",\"batchDuration\":" + durationMs + ",\"numInputRows\":3000,\"inputRowsPerSecond\":1000.0,"
                + "\"processedRowsPerSecond\":2000.0,\"durationMs\":{\"triggerExecution\":" + durationMs + "},"
                + (eventTime == null ? "" : "\"eventTime\":" + eventTime + ",")
                + "\"stateOperators\":[{\"numRowsTotal\":42,\"memoryUsedBytes\":1000},{\"numRowsTotal\":8,"
                + "\"memoryUsedBytes\":24}],\"sources\":[{\"description\":\"KafkaV2[Subscribe[words]]\","
                + "\"startOffset\":{\"words\":{\"0\":100,\"1\":100}},\"endOffset\":{\"words\":{\"0\":150,\"1\":120}},"
                + "\"latestOffset\":{\"words\":{\"0\":200,\"1\":120,\"2\":30}},\"numInputRows\":70,"
                + "\"inputRowsPerSecond\":\"NaN\",\"metrics\":{\"avgOffsetsBehindLatest\":\"25.0\"}}],"
                + "\"sink\":{\"description\":\"ConsoleSinkProvider\",\"numOutputRows\":3}}";
    }

    static double sample(String page, String name) {
        Matcher m = Pattern.compile("(?m)^" + name + "\\{[^}]*} (\\S+)$").matcher(page);
        assertTrue(m.find(), name + " in\n" + page);
        return Double.parseDouble(m.group(1));
    }

    @Test
    void aKafkaProgressGivesBacklogPartitionsAndStateSums() {
        QueryProgress p = QueryProgress.parse(kafkaProgress(4, "2026-12-07T20:00:00.000Z", 1500, null));
        assertEquals("counts", p.query());
        assertEquals(50 + 0 + 30, p.offsetsBehind());  // a partition the batch has not read yet counts from 0
        assertEquals(3, p.partitions());
        assertEquals(150 + 120, p.offsetsRead());
        assertEquals(50, p.stateRows());
        assertEquals(1.5, p.batchSeconds());
        assertNull(p.eventTimeMin());
    }

    @Test
    void offsetsWrittenAsStringsAreReadToo() {
        String json = kafkaProgress(1, "2026-12-07T20:00:00Z", 100, null)
                .replace("\"endOffset\":{\"words\":{\"0\":150,\"1\":120}}", "\"endOffset\":\"{\\\"words\\\":{\\\"0\\\":150}}\"");
        assertEquals(50 + 120 + 30, QueryProgress.parse(json).offsetsBehind());
    }

    @Test
    void garbageIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> QueryProgress.parse("{}"));
        assertThrows(IllegalArgumentException.class, () -> QueryProgress.parse("not json"));
    }

    @Test
    void theIntervalIsMeasuredBetweenBatchStartsAndLatencyEstimatedWithoutAWatermark() {
        StreamingMetrics m = new StreamingMetrics("wc", null);
        m.onProgress(QueryProgress.parse(kafkaProgress(4, "2026-12-07T20:00:00.000Z", 1500, null)));
        String first = m.render();
        assertEquals(1.5, sample(first, "elastream_trigger_interval_seconds"));  // no interval yet: busy 1
        m.onProgress(QueryProgress.parse(kafkaProgress(5, "2026-12-07T20:00:03.000Z", 1500, null)));
        String page = m.render();
        assertEquals(3.0, sample(page, "elastream_trigger_interval_seconds"));
        assertEquals(1.5, sample(page, "elastream_batch_duration_seconds"));
        assertEquals(80, sample(page, "elastream_backlog_records"));
        assertEquals(3, sample(page, "elastream_source_partitions"));
        assertEquals(0, sample(page, "elastream_latency_measured"));
        // waits up to an interval for its batch, then the batch, then the 80 queued at 2000/s
        assertEquals(0.99 * 3.0 + 1.5 + 0.04, sample(page, "elastream_latency_p99_seconds"), 1e-9);
        assertEquals(6000, sample(page, "elastream_records_processed_total"));
        assertEquals(2, sample(page, "elastream_batches_total"));
        assertFalse(page.contains("elastream_executors"), "no executor pool: no executor series");
    }

    @Test
    void anIdleQueryReadsNothingArrivingAndNoBatchRunningUntilItsNextBatch() {
        StreamingMetrics m = new StreamingMetrics("wc", null);
        m.onStarted("q-1", "counts");
        m.onProgress(QueryProgress.parse(kafkaProgress(5, "2026-12-07T20:00:00.000Z", 1500, null)));
        m.onIdle("q-1", java.time.Instant.parse("2026-12-07T20:00:01.000Z"));  // before the batch's commit: ignored
        assertEquals(1000.0, sample(m.render(), "elastream_input_rate"));
        m.onIdle("q-1", java.time.Instant.parse("2026-12-07T20:00:10.000Z"));
        String page = m.render();
        assertEquals(0.0, sample(page, "elastream_input_rate"));
        assertEquals(0.0, sample(page, "elastream_batch_duration_seconds"));
        assertEquals(80 / 2000.0, sample(page, "elastream_latency_p99_seconds"), 1e-9);  // only what waits behind
        assertEquals(2000.0, sample(page, "elastream_processing_rate"));  // what it can do stays known
        m.onProgress(QueryProgress.parse(kafkaProgress(6, "2026-12-07T20:00:20.000Z", 1500, null)));
        assertEquals(1000.0, sample(m.render(), "elastream_input_rate"));
    }

    @Test
    void latencyIsMeasuredFromEventTimesWhenTheQueryHasAWatermark() {
        StreamingMetrics m = new StreamingMetrics("wc", null);
        String eventTime = "{\"min\":\"2026-12-07T19:59:57.000Z\",\"avg\":\"2026-12-07T19:59:59.000Z\","
                + "\"max\":\"2026-12-07T20:00:00.000Z\",\"watermark\":\"2026-12-07T19:59:00.000Z\"}";
        m.onProgress(QueryProgress.parse(kafkaProgress(5, "2026-12-07T20:00:00.000Z", 1500, eventTime)));
        String page = m.render();
        assertEquals(1, sample(page, "elastream_latency_measured"));
        assertEquals(4.5, sample(page, "elastream_latency_p99_seconds"), 1e-9);  // commit at 20:00:01.5
        assertEquals(2.5, sample(page, "elastream_latency_p50_seconds"), 1e-9);
    }

    @Test
    void aTerminatedQueryLeavesThePageAndExecutorsAreExported() {
        FakeCluster c = new FakeCluster("1", "2");
        StreamingMetrics m = new StreamingMetrics("w\"c", new ExecutorPool(c, 1, 4, 2));
        m.onStarted("q-1", "counts");
        m.onProgress(QueryProgress.parse(kafkaProgress(5, "2026-12-07T20:00:00.000Z", 1500, null)));
        String page = m.render();
        assertTrue(page.contains("elastream_executors{app=\"w\\\"c\"} 2\n"), page);
        assertTrue(page.contains("elastream_executor_task_seconds_total{app=\"w\\\"c\",executor=\"2\"} 1.5\n"), page);
        m.forgetRun("q-1");
        assertFalse(m.render().contains("elastream_input_rate"), m.render());
    }

    @Test
    void theBacklogIsAskedOfTheBrokerAtScrapeTimeWhereThePluginCan() {
        java.util.List<java.util.Map<String, java.util.Set<Integer>>> asked = new java.util.ArrayList<>();
        LatestOffsets broker = new LatestOffsets() {
            @Override
            public java.util.Map<String, java.util.Map<Integer, Long>> latest(
                    java.util.Map<String, java.util.Set<Integer>> partitions) {
                asked.add(partitions);
                if (asked.size() > 1) {
                    throw new IllegalStateException("broker down");
                }
                return java.util.Map.of("words", java.util.Map.of(0, 1150L, 1, 120L, 2, 530L));
            }

            @Override
            public void close() {
            }
        };
        StreamingMetrics m = new StreamingMetrics("wc", null, broker);
        m.onProgress(QueryProgress.parse(kafkaProgress(5, "2026-12-07T20:00:00.000Z", 1500, null)));
        String page = m.render();
        // what arrived during the batch counts: 1000 + 0 + 530 past the end offsets (150, 120, none read)
        assertEquals(1530, sample(page, "elastream_backlog_records"));
        assertEquals(java.util.Map.of("words", java.util.Set.of(0, 1, 2)), asked.get(0));
        assertEquals(80, sample(m.render(), "elastream_backlog_records"));  // unreachable: as the batch was planned
    }

    @Test
    void settingsDefaultToTheAppAndItsExecutorInstances() {
        java.util.Map<String, String> conf = java.util.Map.of("spark.app.name", "wc", "spark.executor.instances", "2",
                "spark.master", "spark://h:7077", "spark.elastream.executors.max", "5");
        Settings s = Settings.read(conf::get, java.util.Map.of("ELASTREAM_CONTROL_TOKEN", "t "));
        assertEquals("wc", s.app());
        assertEquals(2, s.initialExecutors());
        assertEquals(1, s.minExecutors());
        assertEquals(5, s.maxExecutors());
        assertEquals("t", s.token());
        assertTrue(s.inPlace());
        assertFalse(Settings.read(java.util.Map.of("spark.master", "local[2]")::get, java.util.Map.of()).inPlace());
        assertThrows(IllegalArgumentException.class, () -> Settings.read(
                java.util.Map.of("spark.elastream.metrics.port", "x")::get, java.util.Map.of()));
        java.util.Map<String, String> kafka = java.util.Map.of("spark.elastream.kafka.bootstrapServers", "b:9092",
                "spark.elastream.kafka.security.protocol", "SSL");
        assertEquals(java.util.Map.of("bootstrap.servers", "b:9092", "security.protocol", "SSL"),
                Settings.read(kafka::get, java.util.Map.of(), kafka.keySet()).kafka());
    }
}
