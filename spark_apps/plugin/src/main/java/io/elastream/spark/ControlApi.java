package io.elastream.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control endpoint's API, the same as elastream's runner has served (spark_apps/control.py):
 *
 * <pre>
 * GET  /healthz            no token; {"status": "ok"}
 * GET  /executors          {"current", "target", "min", "max", "draining", "ids", "mode": "in-place"}
 * PUT  /executors          {"target": n} -> 200 and the new state; 400 {"error"} when out of range or malformed
 * POST /executors/replace  {"executors": ["3", ...]} -> 200 {"replaced": [...]}
 * </pre>
 * A missing or wrong bearer token gets 401 and changes nothing. Kept apart from HTTP so it is tested as a function.
 */
public final class ControlApi {
    public static final int MAX_BODY = 64 * 1024;
    static final String METHODS = "use GET or PUT /executors, or POST /executors/replace";
    private static final Logger LOG = LoggerFactory.getLogger(ControlApi.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private final ExecutorPool pool;
    private final byte[] token;

    public record Response(int status, Object body) {
        public String json() {
            try {
                return JSON.writeValueAsString(body);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** A request the caller must fix; its message is returned as {"error": ...}. */
    static final class BadRequest extends IllegalArgumentException {
        BadRequest(String message) {
            super(message);
        }
    }

    public ControlApi(ExecutorPool pool, String token) {
        if (token == null || token.isBlank()) {
            throw new IllegalArgumentException("the control endpoint needs a non-empty token");
        }
        this.pool = pool;
        this.token = token.strip().getBytes(StandardCharsets.UTF_8);
    }

    public Response handle(String method, String path, String authorization, byte[] body) {
        if ("GET".equals(method) && "/healthz".equals(path)) {
            return new Response(200, Map.of("status", "ok"));
        }
        boolean executors = "/executors".equals(path);
        boolean replace = "/executors/replace".equals(path);
        if ("GET".equals(method) || "PUT".equals(method)) {
            if (!executors) {
                return error(404, "no such path " + path);
            }
        } else if (!"POST".equals(method) || !replace) {
            return error(405, METHODS);
        }
        if (body != null && body.length > MAX_BODY) {
            return error(400, "body larger than " + MAX_BODY + " bytes");
        }
        if (!authorized(authorization)) {
            return error(401, "missing or wrong bearer token");
        }
        try {
            switch (method) {
                case "GET":
                    return new Response(200, pool.state());
                case "PUT":
                    pool.setTarget(parseTarget(body, pool.minimum(), pool.maximum()));
                    return new Response(200, pool.state());
                default:
                    return new Response(200, Map.of("replaced", pool.replace(parseReplace(body))));
            }
        } catch (BadRequest e) {
            return error(400, e.getMessage());
        } catch (RuntimeException e) {  // the driver refused: say so to the caller
            LOG.warn("elastream: {} {} failed", method, path, e);
            return error(503, ("PUT".equals(method) ? "rescale" : "replace") + " failed: " + e);
        }
    }

    boolean authorized(String header) {
        if (header == null || !header.startsWith("Bearer ")) {
            return false;
        }
        byte[] given = header.substring("Bearer ".length()).strip().getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(given, token);  // constant time
    }

    static int parseTarget(byte[] body, int minimum, int maximum) {
        JsonNode doc = parse(body);
        if (doc == null || !doc.isObject() || !doc.has("target")) {
            throw new BadRequest("body must be JSON like {\"target\": 2}");
        }
        JsonNode target = doc.get("target");
        if (!target.isIntegralNumber() || !target.canConvertToInt()) {
            throw new BadRequest("target must be an integer, got " + target);
        }
        int n = target.intValue();
        if (n < minimum || n > maximum) {
            throw new BadRequest("target " + n + " is outside " + minimum + ".." + maximum);
        }
        return n;
    }

    static List<String> parseReplace(byte[] body) {
        JsonNode doc = parse(body);
        JsonNode ids = doc != null && doc.isObject() ? doc.get("executors") : null;
        List<String> out = new ArrayList<>();
        if (ids != null && ids.isArray()) {
            for (JsonNode id : ids) {
                if (!id.isTextual() || id.asText().isEmpty()) {
                    out = null;
                    break;
                }
                out.add(id.asText());
            }
        }
        if (ids == null || out == null || out.isEmpty()) {
            throw new BadRequest("body must be JSON like {\"executors\": [\"1\", \"2\"]}");
        }
        return out;
    }

    private static JsonNode parse(byte[] body) {
        if (body == null || body.length == 0) {
            return null;
        }
        try {
            return JSON.readTree(body);
        } catch (Exception e) {
            return null;
        }
    }

    private static Response error(int status, String message) {
        return new Response(status, Map.of("error", message));
    }
}
