# bakeoff in an image, for `bakeoff ci k8s --image` (docs/scale-out.md, "Kubernetes").
#
#   podman build -t bakeoff:0.1.0 .        (or docker build)
#
# The first stage compiles bakeoff; the second is a slim Debian with what a plan's contenders
# are usually built and fetched with (git, a C toolchain, make) and the binary. A plan's own
# contenders and repository go in an image of yours on top of it:
#
#   FROM bakeoff:0.1.0
#   RUN apt-get update && apt-get install -y --no-install-recommends etcd-server
#   COPY . /work
#
# and `bakeoff ci k8s PLAN --image that-image --workdir /work`.

FROM docker.io/library/rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
# The dist profile: release without debug info (its symbols kept, for flame graphs' names).
RUN cargo build --profile dist --locked --bin bakeoff

FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git gcc libc6-dev make \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/dist/bakeoff /usr/local/bin/bakeoff
WORKDIR /work
CMD ["bakeoff", "--help"]
