package io.elastream.spark;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The executor count of a live driver, changed in place: up by asking the cluster manager for more, down by
 * decommissioning the newest executors (the oldest hold most state-store instances). Thread-safe: the control
 * endpoint, the metrics scrape and the reconcile timer call it from their own threads.
 */
public final class ExecutorPool {
    private final Cluster cluster;
    private final int minimum;
    private final int maximum;
    private int target;
    private final Set<String> draining = new HashSet<>();
    private boolean replacing;

    public ExecutorPool(Cluster cluster, int minimum, int maximum, int initial) {
        if (minimum < 1 || minimum > initial || initial > maximum) {
            throw new IllegalArgumentException(
                "executors: need 1 <= min <= initial <= max, got " + minimum + ", " + initial + ", " + maximum);
        }
        this.cluster = cluster;
        this.minimum = minimum;
        this.maximum = maximum;
        this.target = initial;
    }

    public int minimum() {
        return minimum;
    }

    public int maximum() {
        return maximum;
    }

    public synchronized int target() {
        return target;
    }

    public int current() {
        return cluster.executorIds().size();
    }

    public synchronized int draining() {
        draining.retainAll(new HashSet<>(cluster.executorIds()));
        return draining.size();
    }

    /** The control endpoint's GET /executors document. */
    public synchronized Map<String, Object> state() {
        List<String> ids = cluster.executorIds();
        draining.retainAll(new HashSet<>(ids));
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("current", ids.size());
        doc.put("target", target);
        doc.put("min", minimum);
        doc.put("max", maximum);
        doc.put("draining", draining.size());
        doc.put("ids", ids);
        doc.put("mode", "in-place");
        return doc;
    }

    /** Move toward n executors; returns at once (executors start or drain in the background). */
    public synchronized void setTarget(int n) {
        if (n < minimum || n > maximum) {
            throw new IllegalArgumentException("target " + n + " is outside " + minimum + ".." + maximum);
        }
        List<String> live = live();
        target = n;
        for (String victim : newestFirst(live, live.size() - n)) {
            cluster.decommission(victim, false, "elastream: scale down");
            draining.add(victim);
        }
        cluster.requestTotal(n);
    }

    /**
     * Decommission these executors and let Spark start one in place of each (the target stays): how an executor
     * moves to another node. Returns the ids that were live and not draining already.
     */
    public synchronized List<String> replace(List<String> executorIds) {
        Set<String> live = new HashSet<>(live());
        List<String> moved = new ArrayList<>();
        for (String id : executorIds) {
            if (live.contains(id) && !moved.contains(id)) {
                moved.add(id);
            }
        }
        for (String id : moved) {
            cluster.decommission(id, true, "elastream: placement moves it");
            draining.add(id);  // so reconcile() does not cut the replacement as one too many
        }
        if (!moved.isEmpty()) {
            replacing = true;
            // the total counts the draining ones out: a standalone master then launches the replacements
            cluster.requestTotal(target + draining.size());
        }
        return moved;
    }

    /**
     * Called periodically: decommission executors beyond the target (standalone launches one on every free worker
     * at start whatever spark.executor.instances says, and one may register late), and once replaced executors
     * are gone ask for the target again.
     */
    public synchronized void reconcile() {
        List<String> live = live();
        for (String victim : newestFirst(live, live.size() - target)) {
            cluster.decommission(victim, false, "elastream: more executors than the target");
            draining.add(victim);
        }
        if (replacing && draining.isEmpty()) {
            replacing = false;
            cluster.requestTotal(target);
        }
    }

    public Map<String, Double> taskSeconds() {
        return cluster.taskSeconds();
    }

    private List<String> live() {
        List<String> ids = cluster.executorIds();
        draining.retainAll(new HashSet<>(ids));
        List<String> live = new ArrayList<>(ids);
        live.removeAll(draining);
        return live;
    }

    private static List<String> newestFirst(List<String> ids, int count) {
        if (count <= 0) {
            return List.of();
        }
        List<String> sorted = new ArrayList<>(ids);
        sorted.sort(Comparator.comparingLong(ExecutorPool::numeric).reversed());
        return sorted.subList(0, Math.min(count, sorted.size()));
    }

    private static long numeric(String id) {
        try {
            return Long.parseLong(id);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
