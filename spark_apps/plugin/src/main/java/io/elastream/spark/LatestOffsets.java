package io.elastream.spark;

import java.util.Map;
import java.util.Set;

/** The port to a source's newest offsets, asked at scrape time: what arrived during a long batch is backlog already. */
public interface LatestOffsets extends AutoCloseable {
    /** topic -> partition -> the next offset to be written; throws when the source cannot be reached. */
    Map<String, Map<Integer, Long>> latest(Map<String, Set<Integer>> partitions);

    @Override
    void close();
}
