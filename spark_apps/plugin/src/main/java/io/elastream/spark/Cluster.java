package io.elastream.spark;

import java.util.List;
import java.util.Map;

/** What the executor pool needs of a driver: the port between its rules and Spark's scheduler backend. */
public interface Cluster {
    /** Executors registered with the driver (the driver itself is not one of them). */
    List<String> executorIds();

    /** Ask the cluster manager for this many executors in all. */
    void requestTotal(int executors);

    /**
     * Decommission one executor gracefully (its shuffle and state blocks migrate first).
     * @param replace true: Spark starts another in its place; false: the target shrinks with it
     */
    void decommission(String executorId, boolean replace, String why);

    /** Seconds of task time each live executor has run so far. */
    Map<String, Double> taskSeconds();
}
