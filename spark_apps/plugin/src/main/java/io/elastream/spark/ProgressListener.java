package io.elastream.spark;

import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spark posts every streaming query's events on the driver's listener bus too (that is how the history server
 * sees them), so a plain SparkListener added by the plugin hears every query of every session, with no
 * `spark.sql.streaming.streamingQueryListeners` and no help from the application.
 */
final class ProgressListener extends SparkListener {
    private static final Logger LOG = LoggerFactory.getLogger(ProgressListener.class);
    private final StreamingMetrics metrics;

    ProgressListener(StreamingMetrics metrics) {
        this.metrics = metrics;
    }

    @Override
    public void onOtherEvent(SparkListenerEvent event) {
        try {
            if (event instanceof StreamingQueryListener.QueryProgressEvent p) {
                metrics.onProgress(QueryProgress.parse(p.progress().json()));
            } else if (event instanceof StreamingQueryListener.QueryIdleEvent i) {
                // Spark >= 3.5 posts this, not a progress, while no data arrives: the last batch's numbers
                // would otherwise read as a busy query forever
                metrics.onIdle(i.id().toString(), java.time.Instant.parse(i.timestamp()));
            } else if (event instanceof StreamingQueryListener.QueryTerminatedEvent t) {
                metrics.forgetRun(t.id().toString());
            } else if (event instanceof StreamingQueryListener.QueryStartedEvent s) {
                metrics.onStarted(s.id().toString(), s.name());
            }
        } catch (RuntimeException e) {  // a listener that throws is dropped by the bus: log and keep listening
            LOG.warn("elastream: progress not exported: {}", e.toString());
        }
    }
}
