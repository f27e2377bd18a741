# syntax=docker/dockerfile:1
#
# The metron binary in a small image, for running it where containers run
# (deploy/kubernetes/, docs/distributed.md):
#
#   docker build -t metron:latest .
#   docker run --rm metron:latest -t2 -c50 -d30s -R2k http://host.example:8080/
#
# The image's entrypoint is metron itself, so the container's arguments are
# metron's (`metron merge ...` is `docker run ... metron:latest merge ...`).

# Build stage: the whole workspace, compiled in release mode. crates/core
# builds LuaJIT from source (through mlua's vendored feature), which needs a
# C compiler and make besides the Rust toolchain.
FROM rust:1-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the binary is built from: the manifests, the lock file (held to
# by --locked) and the sources of the root package and of its crates.
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
# The registry and target directories are cache mounts, kept between builds
# by BuildKit, so a rebuild after a source change recompiles only metron's
# crates; the binary is copied out of the cache in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p metron \
    && install -m 0755 target/release/metron /usr/local/bin/metron

# Runtime stage: the binary, the system's certificate authorities (metron
# verifies https:// targets against them by default) and an unprivileged
# user. The user's id is fixed so that manifests can name it (the
# Kubernetes manifests run as 10001 and give the results volume that group).
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 metron \
    && useradd --uid 10001 --gid metron --no-create-home --shell /usr/sbin/nologin metron
COPY --from=build /usr/local/bin/metron /usr/local/bin/metron
USER 10001:10001
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/metron"]
CMD ["--help"]
