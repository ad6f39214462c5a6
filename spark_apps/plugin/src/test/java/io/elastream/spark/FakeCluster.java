package io.elastream.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A driver's executors as the pool sees them: ids, the total asked for, what was decommissioned. */
final class FakeCluster implements Cluster {
    final List<String> ids = new ArrayList<>();
    final List<String> decommissioned = new ArrayList<>();
    final List<Boolean> replaced = new ArrayList<>();
    int requested = -1;

    FakeCluster(String... ids) {
        this.ids.addAll(List.of(ids));
    }

    @Override
    public List<String> executorIds() {
        return new ArrayList<>(ids);
    }

    @Override
    public void requestTotal(int executors) {
        requested = executors;
    }

    @Override
    public void decommission(String executorId, boolean replace, String why) {
        decommissioned.add(executorId);
        replaced.add(replace);
    }

    @Override
    public Map<String, Double> taskSeconds() {
        Map<String, Double> m = new LinkedHashMap<>();
        ids.forEach(id -> m.put(id, 1.5));
        return m;
    }
}
