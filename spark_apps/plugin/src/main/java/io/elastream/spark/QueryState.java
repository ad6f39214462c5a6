package io.elastream.spark;

import java.time.Duration;
import java.time.Instant;

/**
 * What the plugin knows of one streaming query: its last batch, the interval since the batch before, and its
 * counters. Latency is measured where the query has an event-time watermark (Spark then reports each batch's
 * event-time minimum and average); without one it is estimated from the batches' timing (see latencyMeasured()).
 */
public final class QueryState {
    private QueryProgress last;
    private double intervalSeconds;
    private long records;
    private long batches;
    private Instant idleSince;  // Spark said the query waits for data, after its last batch

    public synchronized void update(QueryProgress p) {
        idleSince = null;
        if (last != null && p.batchId() > last.batchId()) {
            intervalSeconds = Duration.between(last.triggeredAt(), p.triggeredAt()).toNanos() / 1e9;
        } else if (last == null || p.batchId() < last.batchId()) {
            intervalSeconds = 0;  // the first batch, or a restarted query: no interval yet
        }
        last = p;
        records += p.inputRows();
        batches += 1;
    }

    /** No data since the last batch (Spark's QueryIdleEvent at `at`). */
    public synchronized void idle(Instant at) {
        if (last != null && at.isAfter(last.committedAt())) {
            idleSince = at;
        }
    }

    public synchronized Snapshot snapshot() {
        return last == null ? null : new Snapshot(last, intervalSeconds, records, batches, idleSince != null);
    }

    /**
     * One consistent reading of a query for a scrape. Idle: the query waits for data since its last batch, so
     * nothing arrives, no batch runs and no record waits but those the source reports behind.
     */
    public record Snapshot(QueryProgress last, double measuredInterval, long records, long batches, boolean idle) {
        /**
         * Seconds between the starts of the last two batches: the trigger interval while the query keeps up (or
         * more, when Spark skips batches without data), the batch duration when it runs batches back to back
         * (overloaded, or a trigger of 0). Before the second batch: the first batch's duration.
         */
        public double interval() {
            return measuredInterval > 0 ? measuredInterval : Math.max(last.batchSeconds(), 1e-3);
        }

        public boolean latencyMeasured() {
            return last.eventTimeMin() != null;
        }

        /** Median end-to-end latency, event time to the batch's commit; `behind`: the records still to read. */
        public double latencyP50(long behind) {
            if (idle) {
                return queued(behind);
            }
            if (latencyMeasured() && last.eventTimeAvg() != null) {
                return seconds(last.eventTimeAvg(), last.committedAt());
            }
            return interval() / 2 + last.batchSeconds() + queued(behind);
        }

        /** 99th percentile end-to-end latency: from the batch's oldest event time to its commit. */
        public double latencyP99(long behind) {
            if (idle) {
                return queued(behind);
            }
            if (latencyMeasured()) {
                return seconds(last.eventTimeMin(), last.committedAt());
            }
            // a record that arrived just after the previous batch was planned waits one interval, then its batch
            return 0.99 * interval() + last.batchSeconds() + queued(behind);
        }

        /** Seconds the records not read yet wait at the measured processing rate. */
        private double queued(long behind) {
            return last.processingRate() > 0 ? behind / last.processingRate() : 0.0;
        }

        private static double seconds(Instant from, Instant to) {
            return Math.max(0.0, Duration.between(from, to).toNanos() / 1e9);
        }
    }
}
