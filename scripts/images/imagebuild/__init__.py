"""A small Dockerfile interpreter that builds single-layer docker-archive images without Docker or a registry.

dockerfile  parse the supported Dockerfile subset, refuse the rest with file:line
context     .dockerignore and the content digest of COPY sources
builder     plan (pure: steps, cache keys, image config) and build (run steps, checks, export)
rootfs      debootstrap'd debian:bookworm-slim, overlayfs stacking, chroot'ed RUN (needs root)
cache       step snapshots and image tars under <cache>/images, atomic writes, superseded entries dropped
archive     docker-archive writing
wheels      the host-made wheel cache pip installs from inside RUN steps
specs       the project's images and their smoke checks
cli         scripts/build-images
"""
