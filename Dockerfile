# syntax=docker/dockerfile:1
#
# The `callstream` binary in a slim image. Every role is a subcommand (`callstream gateway`,
# `callstream process contact`, `callstream projections`, ...), so this one image runs every
# service of docker-compose.yml.
#
#   docker build -t callstream .
#   docker run --rm callstream --help

# The workspace declares rust-version 1.85, but the locked dependencies need more (uuid 1.29
# wants 1.89). Builder and runtime share one Debian suite, so the glibc the binary was linked
# against is the one it runs on.
ARG RUST_VERSION=1.94.1
ARG DEBIAN_SUITE=trixie

FROM rust:${RUST_VERSION}-${DEBIAN_SUITE} AS builder
# librdkafka is built from rdkafka-sys's bundled sources with its own `./configure` (a bash
# script) and `make`, then linked statically, with `libz`, `zstd` (bundled zstd sources) and
# `ssl-vendored`: OpenSSL is built from source too (openssl-src, whose Configure is perl), so
# the image needs no libssl. The build needs a C and C++ toolchain, make, perl, and zlib's
# headers (found with pkg-config; the binary then links the system libz.so.1); python3 is run
# by librdkafka's Makefile (version string, linker script). No cmake, no Cyrus SASL (SCRAM,
# PLAIN and OAUTHBEARER are librdkafka's own). The full rust image has most of these
# already; naming them keeps the build working if its base changes. Versions are the suite's (not pinned one by
# one: Debian replaces them with security fixes, and a pin would then fail the build).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential pkg-config zlib1g-dev python3 perl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Cache mounts keep the crates and the target directory between builds; the binary is copied
# out of the cached target directory in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release -p callstream --locked \
 && install -D -m 0755 target/release/callstream /out/callstream

FROM debian:${DEBIAN_SUITE}-slim AS runtime
# ca-certificates for TLS to the voice platform and the CRM (reqwest also carries its own
# roots); curl for the compose healthchecks on /healthz and /readyz. zlib and libgcc, the
# binary's other shared libraries, are part of every Debian system.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 callstream \
 && useradd --system --uid 10001 --gid callstream --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin callstream
COPY --from=builder /out/callstream /usr/local/bin/callstream
# Numeric, so a runtime can check it is not root without reading /etc/passwd.
USER 10001:10001
# gateway, operator API, a processor's /metrics /healthz /readyz (CALLSTREAM_METRICS_ADDR),
# the admin listeners (/metrics) of the gateway, the operator API and the projections
EXPOSE 8080 8081 9400 9401 9402 9403
ENTRYPOINT ["callstream"]
CMD ["--help"]
