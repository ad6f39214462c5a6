package io.elastream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ControlApiTest {
    private final FakeCluster cluster = new FakeCluster("1");
    private final ControlApi api = new ControlApi(new ExecutorPool(cluster, 1, 3, 1), "s3cret");

    private ControlApi.Response call(String method, String path, String auth, String body) {
        return api.handle(method, path, auth, body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void healthNeedsNoToken() {
        assertEquals(200, call("GET", "/healthz", null, null).status());
    }

    @Test
    void aMissingOrWrongTokenChangesNothing() {
        assertEquals(401, call("PUT", "/executors", null, "{\"target\": 2}").status());
        assertEquals(401, call("PUT", "/executors", "Bearer nope", "{\"target\": 2}").status());
        assertEquals(401, call("GET", "/executors", "Basic s3cret", null).status());
        assertEquals(-1, cluster.requested);
    }

    @Test
    void putSetsTheTargetAndReturnsTheState() {
        ControlApi.Response r = call("PUT", "/executors", "Bearer s3cret", "{\"target\": 2}");
        assertEquals(200, r.status());
        assertTrue(r.json().contains("\"target\":2"), r.json());
        assertTrue(r.json().contains("\"mode\":\"in-place\""), r.json());
        assertEquals(2, cluster.requested);
    }

    @Test
    void badBodiesSayWhatIsWrong() {
        String auth = "Bearer s3cret";
        assertEquals("{\"error\":\"target 5 is outside 1..3\"}", call("PUT", "/executors", auth, "{\"target\": 5}").json());
        assertEquals("{\"error\":\"target must be an integer, got \\\"2\\\"\"}",
                call("PUT", "/executors", auth, "{\"target\": \"2\"}").json());
        assertEquals(400, call("PUT", "/executors", auth, "{\"target\": 2.5}").status());
        assertEquals(400, call("PUT", "/executors", auth, "not json").status());
        assertEquals(400, call("POST", "/executors/replace", auth, "{\"executors\": []}").status());
        assertEquals(400, call("POST", "/executors/replace", auth, "{\"executors\": [1]}").status());
        assertEquals(400, call("PUT", "/executors", auth, "x".repeat(ControlApi.MAX_BODY + 1)).status());
        assertEquals(-1, cluster.requested);
    }

    @Test
    void unknownPathsAndMethods() {
        assertEquals(404, call("GET", "/nope", "Bearer s3cret", null).status());
        assertEquals(405, call("DELETE", "/executors", "Bearer s3cret", null).status());
        assertEquals(405, call("POST", "/executors", "Bearer s3cret", null).status());
    }

    @Test
    void replaceReturnsTheIdsItMoved() {
        ControlApi.Response r = call("POST", "/executors/replace", "Bearer s3cret", "{\"executors\": [\"1\", \"7\"]}");
        assertEquals(200, r.status());
        assertEquals("{\"replaced\":[\"1\"]}", r.json());
    }
}
