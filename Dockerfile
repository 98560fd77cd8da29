# syntax=docker/dockerfile:1
# Aiden: one image, one binary. `docker compose` (compose.yaml) runs it as `serve`, `migrate`
# and one `worker --type T` pool per operation type. See docs/deploy.md.

# ---- build ------------------------------------------------------------------------------
FROM rust:1-bookworm AS builder
# aws-lc-sys (rustls' crypto backend) compiles C; cmake and clang keep its build on the
# well-trodden path on every architecture.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends cmake clang \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The whole workspace (members crates/* and tests); .dockerignore keeps target/ and .stack/ out.
COPY . .
# Cache mounts keep the registry and target/ between builds; the binary is copied out of the
# cached target/ in the same step, since cache mounts are not part of the image.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release -p aiden --locked \
 && install -m 0755 target/release/aiden /usr/local/bin/aiden

# ---- runtime ----------------------------------------------------------------------------
FROM debian:bookworm-slim
# ca-certificates: TLS to LLM/REST/MCP endpoints; curl: the compose healthcheck on /readyz.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 aiden \
 && useradd --system --uid 10001 --gid aiden --home-dir /opt/aiden --shell /usr/sbin/nologin aiden
COPY --from=builder /usr/local/bin/aiden /usr/local/bin/aiden
# The binary embeds the schema; cypher/ is kept for reference and inspection. seed/ is what
# `aiden apply -f /opt/aiden/seed` loads.
COPY cypher/ /opt/aiden/cypher/
COPY seed/ /opt/aiden/seed/
WORKDIR /opt/aiden
# Numeric, so that runtimes enforcing "non-root" can verify it without reading /etc/passwd.
USER 10001:10001
# Inside a container the API must listen beyond loopback; compose.yaml sets it too.
ENV AIDEN_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["aiden"]
CMD ["serve"]
