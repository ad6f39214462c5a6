package io.elastream.spark;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The plugin's two HTTP servers (the JDK's own: nothing added to the driver's classpath), each with two daemon
 * threads: a few calls a minute from the operator, one scrape every few seconds from Prometheus.
 */
final class Endpoints {
    private Endpoints() {
    }

    static HttpServer metrics(String host, int port, Supplier<String> page) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 16);
        server.createContext("/", exchange -> {
            try (exchange) {
                String path = exchange.getRequestURI().getPath();
                if (!"GET".equals(exchange.getRequestMethod()) || !("/metrics".equals(path) || "/".equals(path))) {
                    reply(exchange, 404, "text/plain", "GET /metrics\n");
                    return;
                }
                reply(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", page.get());
            }
        });
        return start(server, "elastream-metrics");
    }

    static HttpServer control(String host, int port, ControlApi api) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 16);
        server.createContext("/", exchange -> {
            try (exchange) {
                byte[] body = readAtMost(exchange.getRequestBody(), ControlApi.MAX_BODY + 1);
                ControlApi.Response r = api.handle(exchange.getRequestMethod(), exchange.getRequestURI().getPath(),
                        exchange.getRequestHeaders().getFirst("Authorization"), body);
                if (r.status() == 401) {
                    exchange.getResponseHeaders().add("WWW-Authenticate", "Bearer realm=\"elastream\"");
                }
                reply(exchange, r.status(), "application/json", r.json());
            }
        });
        return start(server, "elastream-control");
    }

    private static HttpServer start(HttpServer server, String name) {
        ExecutorService pool = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(pool);
        server.start();
        return server;
    }

    private static byte[] readAtMost(InputStream in, int limit) throws IOException {
        return in.readNBytes(limit);
    }

    private static void reply(HttpExchange exchange, int status, String type, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", type);
        exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }
}
