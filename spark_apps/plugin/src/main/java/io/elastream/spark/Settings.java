package io.elastream.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The plugin's configuration, all of it `spark.elastream.*` keys a user adds beside `spark.plugins` (docs/your-app.md).
 * Read from a key lookup so it is tested without a SparkConf.
 */
public record Settings(String app, String bindAddress, int metricsPort, int controlPort, String token,
                       int minExecutors, int maxExecutors, int initialExecutors, boolean inPlace,
                       Map<String, String> kafka) {

    public static final String PREFIX = "spark.elastream.";

    public static final String KAFKA = PREFIX + "kafka.";

    /**
     * conf: key -> value or null; env: the process environment (the token may come from it); kafkaKeys: the conf's
     * keys under spark.elastream.kafka. (a Kafka consumer's properties, bootstrapServers as bootstrap.servers).
     */
    public static Settings read(UnaryOperator<String> conf, Map<String, String> env, Iterable<String> kafkaKeys) {
        String app = or(conf.apply(PREFIX + "app"), or(conf.apply("spark.app.name"), "spark"));
        int initial = integer(conf, PREFIX + "executors.initial",
                integer(conf, "spark.executor.instances", integer(conf, PREFIX + "executors.min", 1)));
        int min = integer(conf, PREFIX + "executors.min", 1);
        int max = integer(conf, PREFIX + "executors.max", initial);
        String master = or(conf.apply("spark.master"), "");
        boolean dynamic = Boolean.parseBoolean(or(conf.apply("spark.dynamicAllocation.enabled"), "false"));
        return new Settings(app, or(conf.apply(PREFIX + "bindAddress"), "0.0.0.0"),
                integer(conf, PREFIX + "metrics.port", 9108), integer(conf, PREFIX + "control.port", 9109),
                token(conf.apply(PREFIX + "control.tokenFile"), env), Math.max(1, min), max, initial,
                inPlacePossible(master) && !dynamic, kafka(conf, kafkaKeys));
    }

    public static Settings read(UnaryOperator<String> conf, Map<String, String> env) {
        return read(conf, env, java.util.List.of(KAFKA + "bootstrapServers"));
    }

    private static Map<String, String> kafka(UnaryOperator<String> conf, Iterable<String> keys) {
        Map<String, String> props = new java.util.TreeMap<>();
        for (String key : keys) {
            String value = conf.apply(key);
            if (key.startsWith(KAFKA) && value != null && !value.isBlank()) {
                String prop = key.substring(KAFKA.length());
                props.put("bootstrapServers".equals(prop) ? "bootstrap.servers" : prop, value.strip());
            }
        }
        return props;
    }

    /** Executors can be added and removed without a restart: standalone, local-cluster, Kubernetes; not local[N]. */
    static boolean inPlacePossible(String master) {
        return !master.isEmpty() && !master.matches("local(\\[(\\d+|\\*)(,\\d+)?\\])?");
    }

    private static String token(String file, Map<String, String> env) {
        if (file != null && !file.isBlank()) {
            try {
                return Files.readString(Path.of(file), StandardCharsets.UTF_8).strip();
            } catch (IOException e) {
                throw new IllegalArgumentException(PREFIX + "control.tokenFile: cannot read " + file + ": " + e, e);
            }
        }
        return or(env.get("ELASTREAM_CONTROL_TOKEN"), "").strip();
    }

    private static int integer(UnaryOperator<String> conf, String key, int fallback) {
        String v = conf.apply(key);
        if (v == null || v.isBlank()) {
            return fallback;
        }
        try {
            return Integer.parseInt(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be an integer, got " + v, e);
        }
    }

    private static String or(String v, String fallback) {
        return v == null || v.isBlank() ? fallback : v;
    }
}
