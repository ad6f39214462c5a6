package io.elastream.spark;

import com.sun.net.httpserver.HttpServer;
import java.util.Collections;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * elastream inside any Spark driver — PySpark, Scala, Java, SQL — by configuration alone:
 * {@code spark.plugins=io.elastream.spark.ElastreamPlugin} with this jar on the driver's classpath. It exports every
 * streaming query's metrics for Prometheus and serves the control endpoint the operator rescales executors through.
 */
public class ElastreamPlugin implements SparkPlugin {
    @Override
    public DriverPlugin driverPlugin() {
        return new Driver();
    }

    @Override
    public ExecutorPlugin executorPlugin() {
        return null;  // nothing to do in executors
    }

    static final class Driver implements DriverPlugin {
        private static final Logger LOG = LoggerFactory.getLogger(ElastreamPlugin.class);
        private HttpServer metricsServer;
        private HttpServer controlServer;
        private ScheduledExecutorService timer;
        private LatestOffsets source;

        /** The broker's offsets where the user named it and kafka-clients is on the classpath; else null. */
        private static LatestOffsets latestOffsets(Settings s) {
            if (!s.kafka().containsKey("bootstrap.servers")) {
                return null;
            }
            try {
                return new KafkaLatestOffsets(s.kafka());
            } catch (LinkageError e) {  // no kafka-clients: the application does not read Kafka through Spark
                LOG.warn("elastream: {}kafka.bootstrapServers is set but kafka-clients is not on the classpath: "
                        + "backlog as each batch was planned", Settings.PREFIX);
                return null;
            }
        }

        @Override
        public Map<String, String> init(SparkContext sc, PluginContext pluginContext) {
            java.util.List<String> kafkaKeys = new java.util.ArrayList<>();
            for (scala.Tuple2<String, String> kv : sc.getConf().getAllWithPrefix(Settings.KAFKA)) {
                kafkaKeys.add(Settings.KAFKA + kv._1());
            }
            Settings s = Settings.read(key -> sc.getConf().getOption(key).getOrElse(() -> null), System.getenv(),
                    kafkaKeys);
            ExecutorPool pool = s.inPlace()
                    ? new ExecutorPool(new SparkCluster(sc), s.minExecutors(), s.maxExecutors(), s.initialExecutors())
                    : null;
            source = latestOffsets(s);
            StreamingMetrics metrics = new StreamingMetrics(s.app(), pool, source);
            sc.addSparkListener(new ProgressListener(metrics));
            try {
                metricsServer = Endpoints.metrics(s.bindAddress(), s.metricsPort(), metrics::render);
                if (pool == null) {
                    LOG.warn("elastream: executors are not rescaled in place here (master {}, dynamic allocation "
                            + "{}): no control endpoint", sc.master(), sc.getConf().get("spark.dynamicAllocation.enabled", "false"));
                } else if (s.token().isEmpty()) {
                    LOG.warn("elastream: no control token ({}control.tokenFile or $ELASTREAM_CONTROL_TOKEN): no "
                            + "control endpoint", Settings.PREFIX);
                } else {
                    controlServer = Endpoints.control(s.bindAddress(), s.controlPort(), new ControlApi(pool, s.token()));
                    timer = Executors.newSingleThreadScheduledExecutor(r -> {
                        Thread t = new Thread(r, "elastream-reconcile");
                        t.setDaemon(true);
                        return t;
                    });
                    timer.scheduleWithFixedDelay(() -> reconcile(pool), 1000, 500, TimeUnit.MILLISECONDS);
                }
            } catch (java.io.IOException e) {
                shutdown();
                throw new IllegalStateException("elastream: cannot listen on " + s.bindAddress() + ": " + e, e);
            }
            LOG.info("elastream: metrics on {}:{}{}", s.bindAddress(), s.metricsPort(),
                    controlServer == null ? "" : ", control on " + s.bindAddress() + ":" + s.controlPort()
                            + " (executors " + s.minExecutors() + ".." + s.maxExecutors() + ")");
            return Collections.emptyMap();
        }

        private static void reconcile(ExecutorPool pool) {
            try {
                pool.reconcile();
            } catch (RuntimeException e) {  // the scheduler backend starts after the plugins, and stops before them
                LOG.debug("elastream: reconcile skipped: {}", e.toString());
            }
        }

        @Override
        public void shutdown() {
            if (timer != null) {
                timer.shutdownNow();
            }
            if (controlServer != null) {
                controlServer.stop(0);
            }
            if (metricsServer != null) {
                metricsServer.stop(0);
            }
            if (source != null) {
                source.close();
            }
        }
    }
}
