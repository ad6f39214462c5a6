# CoreDNS for the test cluster's real nodes: localhost/elastream/coredns:v1.15.0.
# The context is the directory of the static binary that `scripts/test-cluster build` makes
# (~/.cache/elastream/bin/coredns-v1.15.0/). With Docker:
#   docker build -f scripts/images/coredns.Dockerfile -t localhost/elastream/coredns:v1.15.0 \
#     ~/.cache/elastream/bin/coredns-v1.15.0
FROM scratch
COPY coredns /coredns
ENTRYPOINT ["/coredns"]
