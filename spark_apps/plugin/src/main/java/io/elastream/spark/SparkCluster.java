package io.elastream.spark;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.ExecutorAllocationClient;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.ExecutorDecommissionInfo;
import org.apache.spark.status.api.v1.ExecutorSummary;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The Cluster port over a live SparkContext: the driver's own executor-allocation calls (developer APIs, dynamic
 * allocation off), the ones a standalone, local-cluster or Kubernetes master honours without a restart.
 */
final class SparkCluster implements Cluster {
    private final SparkContext sc;

    SparkCluster(SparkContext sc) {
        this.sc = sc;
    }

    @Override
    public List<String> executorIds() {
        return CollectionConverters.asJava(sc.getExecutorIds());
    }

    @Override
    public void requestTotal(int executors) {
        sc.requestTotalExecutors(executors, 0, scala.collection.immutable.Map$.MODULE$.empty());
    }

    @Override
    public void decommission(String executorId, boolean replace, String why) {
        ExecutorAllocationClient backend = (ExecutorAllocationClient) sc.schedulerBackend();
        // adjustTargetNumExecutors = !replace; triggeredByExecutor = false: the driver asks
        backend.decommissionExecutor(executorId, new ExecutorDecommissionInfo(why, Option.empty()), !replace, false);
    }

    @Override
    public Map<String, Double> taskSeconds() {
        Map<String, Double> out = new LinkedHashMap<>();
        for (ExecutorSummary s : CollectionConverters.asJava(sc.statusStore().executorList(true))) {
            if (!"driver".equals(s.id())) {
                out.put(s.id(), s.totalDuration() / 1000.0);
            }
        }
        return out;
    }
}
