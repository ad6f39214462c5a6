# Prometheus for the end-to-end tests: Debian bookworm's prometheus package (localhost/elastream/prometheus:1).
# The configuration is mounted at run time (a ConfigMap at /etc/prometheus/prometheus.yml); data goes to
# /prometheus, owned by nobody (65534), the user it runs as.
#   docker build -f scripts/images/prometheus.Dockerfile -t localhost/elastream/prometheus:1 scripts/images
FROM debian:bookworm-slim
ARG DEBIAN_FRONTEND=noninteractive
# the web UI uses moment-timezone's bundled builds; its 200 MB of raw time zone data are left out
RUN echo 'path-exclude /usr/share/javascript/moment-timezone/data/*' > /etc/dpkg/dpkg.cfg.d/no-moment-timezone-data \
 && apt-get update \
 && apt-get install -y --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /prometheus \
 && chown 65534:65534 /prometheus
USER 65534:65534
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
