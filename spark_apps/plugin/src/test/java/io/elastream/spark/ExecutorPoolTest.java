package io.elastream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class ExecutorPoolTest {
    @Test
    void scalingUpAsksForTheTotalAndDecommissionsNothing() {
        FakeCluster c = new FakeCluster("1");
        ExecutorPool pool = new ExecutorPool(c, 1, 4, 1);
        pool.setTarget(3);
        assertEquals(3, c.requested);
        assertEquals(List.of(), c.decommissioned);
        assertEquals(3, pool.state().get("target"));
    }

    @Test
    void scalingDownDecommissionsTheNewestWithoutReplacement() {
        FakeCluster c = new FakeCluster("1", "2", "10", "3");
        ExecutorPool pool = new ExecutorPool(c, 1, 4, 4);
        pool.setTarget(2);
        assertEquals(List.of("10", "3"), c.decommissioned);  // numeric order: 10 is newer than 3
        assertEquals(List.of(false, false), c.replaced);
        assertEquals(2, c.requested);
        assertEquals(2, pool.state().get("draining"));
        c.ids.removeAll(List.of("10", "3"));  // they drained
        assertEquals(0, pool.draining());
    }

    @Test
    void aTargetOutsideTheBoundsIsRefused() {
        ExecutorPool pool = new ExecutorPool(new FakeCluster("1"), 1, 2, 1);
        assertThrows(IllegalArgumentException.class, () -> pool.setTarget(3));
        assertThrows(IllegalArgumentException.class, () -> pool.setTarget(0));
        assertThrows(IllegalArgumentException.class, () -> new ExecutorPool(new FakeCluster(), 2, 4, 1));
    }

    @Test
    void reconcileTrimsExecutorsAStandaloneMasterLaunchedBeyondTheTarget() {
        FakeCluster c = new FakeCluster("0", "1", "2");
        ExecutorPool pool = new ExecutorPool(c, 1, 4, 1);
        pool.reconcile();
        assertEquals(List.of("2", "1"), c.decommissioned);
        pool.reconcile();  // already draining: not decommissioned twice
        assertEquals(2, c.decommissioned.size());
    }

    @Test
    void replaceDecommissionsLiveExecutorsWithReplacementAndKeepsTheTarget() {
        FakeCluster c = new FakeCluster("1", "2");
        ExecutorPool pool = new ExecutorPool(c, 1, 4, 2);
        assertEquals(List.of("2"), pool.replace(List.of("2", "9", "2")));  // 9 is not live; 2 once
        assertEquals(List.of(true), c.replaced);
        assertEquals(3, c.requested);  // the target plus the one draining, so a replacement starts
        c.ids.add("3");
        pool.reconcile();  // the replacement is not one too many while 2 drains
        assertEquals(List.of("2"), c.decommissioned);
        c.ids.remove("2");
        pool.reconcile();
        assertEquals(2, c.requested);  // drained: the target again
        assertEquals(2, pool.target());
    }
}
