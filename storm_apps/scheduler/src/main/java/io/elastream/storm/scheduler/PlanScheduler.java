package io.elastream.storm.scheduler;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.DefaultScheduler;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies the executor -> worker -> node plan that elastream computes (ETW/WTN over measured tuple rates) and
 * leaves everything else to Storm's DefaultScheduler.
 *
 * The plan is the topology conf key {@value #PLAN_KEY}, set at submit or delivered by a rebalance's
 * topology_conf_overrides: {"workers": [{"node": NAME, "executors": [[taskStart, taskEnd], ...]}, ...]}.
 * NAME is a supervisor's supervisor.scheduler.meta name, its id or its host. A planned worker whose node is
 * unknown or has no free slot, or whose executors no longer exist (a later rebalance changed them), is skipped:
 * those executors go to the DefaultScheduler, so a stale or bad plan never stops a topology from running.
 */
public class PlanScheduler implements IScheduler {
    public static final String PLAN_KEY = "elastream.placement.plan";
    private static final Logger LOG = LoggerFactory.getLogger(PlanScheduler.class);
    private final DefaultScheduler fallback = new DefaultScheduler();

    @Override
    public void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry) {
        fallback.prepare(conf, metricsRegistry);
    }

    @Override
    public Map config() {
        return new HashMap<String, Map<String, Double>>();
    }

    @Override
    public void schedule(Topologies topologies, Cluster cluster) {
        for (TopologyDetails topology : cluster.needsSchedulingTopologies()) {
            Object plan = topology.getConf().get(PLAN_KEY);
            if (plan instanceof Map && cluster.getAssignmentById(topology.getId()) == null) {
                try {
                    int placed = applyPlan(topology, (Map<?, ?>) plan, cluster);
                    LOG.info("elastream plan for {}: {} executors placed", topology.getName(), placed);
                } catch (RuntimeException e) {  // a malformed plan: the default scheduler places the topology
                    LOG.warn("elastream plan for {} not applied: {}", topology.getName(), e.toString());
                }
            }
        }
        fallback.schedule(topologies, cluster);
    }

    private static int applyPlan(TopologyDetails topology, Map<?, ?> plan, Cluster cluster) {
        Map<String, ExecutorDetails> unassigned = new HashMap<>();
        for (ExecutorDetails e : cluster.getUnassignedExecutors(topology)) {
            unassigned.put(e.getStartTask() + "-" + e.getEndTask(), e);
        }
        Set<WorkerSlot> taken = new HashSet<>();
        int placed = 0;
        for (Object w : (List<?>) plan.get("workers")) {
            Map<?, ?> worker = (Map<?, ?>) w;
            List<ExecutorDetails> executors = new ArrayList<>();
            for (Object range : (List<?>) worker.get("executors")) {
                List<?> r = (List<?>) range;
                ExecutorDetails e = unassigned.remove(((Number) r.get(0)).intValue() + "-" + ((Number) r.get(1)).intValue());
                if (e != null) {
                    executors.add(e);
                }
            }
            WorkerSlot slot = freeSlot(cluster, String.valueOf(worker.get("node")), taken);
            if (executors.isEmpty() || slot == null) {
                executors.forEach(e -> unassigned.put(e.getStartTask() + "-" + e.getEndTask(), e));
                continue;
            }
            taken.add(slot);
            cluster.assign(slot, topology.getId(), executors);
            placed += executors.size();
        }
        return placed;
    }

    private static WorkerSlot freeSlot(Cluster cluster, String node, Set<WorkerSlot> taken) {
        for (SupervisorDetails s : cluster.getSupervisors().values()) {
            if (!node.equals(metaName(s)) && !node.equals(s.getId()) && !node.equals(s.getHost())) {
                continue;
            }
            Collection<WorkerSlot> slots = cluster.getAvailableSlots(s);
            for (WorkerSlot slot : slots) {
                if (!taken.contains(slot)) {
                    return slot;
                }
            }
        }
        return null;
    }

    private static String metaName(SupervisorDetails s) {
        Object meta = s.getSchedulerMeta();
        return meta instanceof Map ? String.valueOf(((Map<?, ?>) meta).get("name")) : null;
    }
}
