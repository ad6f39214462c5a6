package io.elastream.spark;

import java.util.Map;

/**
 * Prometheus' text exposition format (version 0.0.4), written by hand: a few gauges and counters do not justify a
 * client library that would have to be shaded into every user's driver.
 */
final class Exposition {
    private final StringBuilder out = new StringBuilder();

    /** Starts a family; samples follow with sample(). */
    Exposition family(String name, String type, String help) {
        out.append("# HELP ").append(name).append(' ').append(help.replace("\\", "\\\\").replace("\n", "\\n"))
                .append('\n').append("# TYPE ").append(name).append(' ').append(type).append('\n');
        return this;
    }

    Exposition sample(String name, Map<String, String> labels, double value) {
        out.append(name);
        if (!labels.isEmpty()) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, String> l : labels.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                out.append(l.getKey()).append("=\"").append(escape(l.getValue())).append('"');
            }
            out.append('}');
        }
        out.append(' ').append(format(value)).append('\n');
        return this;
    }

    static String escape(String v) {
        return v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    static String format(double v) {
        if (Double.isNaN(v)) {
            return "NaN";
        }
        if (Double.isInfinite(v)) {
            return v > 0 ? "+Inf" : "-Inf";
        }
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return Long.toString((long) v);
        }
        return Double.toString(v);
    }

    @Override
    public String toString() {
        return out.toString();
    }

    static Map<String, String> labels(String... kv) {
        java.util.LinkedHashMap<String, String> m = new java.util.LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }
}
