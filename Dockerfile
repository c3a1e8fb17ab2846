# The back end: the runtime with the selected content compiled into it.
#   docker build --build-arg BUILD_TYPE=site --build-arg MVN_PROJECT=makala -t dse-rdc/backend:makala .
# A content error fails the build and prints the compiler's diagnostics, unless the
# baseline records it: validator-baseline.json at the root, or the file named by
# --build-arg VALIDATOR_BASELINE=baselines/<name>.json.

FROM rust:1.95-slim-bookworm AS build
ARG BUILD_TYPE=distro
ARG MVN_PROJECT=
ARG VALIDATOR_BASELINE=
WORKDIR /src
# The baseline is optional: the wildcard copies it only where it exists.
COPY Cargo.toml Cargo.lock content.properties validator-baseline.jso[n] ./
COPY content-packages ./content-packages
COPY baselines ./baselines
COPY compiler ./compiler
COPY runtime ./runtime
COPY openmrs_config ./openmrs_config
COPY sites ./sites
COPY frontend/config ./frontend/config
COPY frontend/assets ./frontend/assets
# Which front-end modules the image ships, which the configuration check reads.
COPY frontend/spa-modules.json ./frontend/
COPY frontend/modules ./frontend/modules
# Check first, so a content error is reported in full, then build the runtime, which
# compiles the same content into its binary.
RUN cargo build --release --locked -p compiler \
 && ./target/release/compiler check --build-type "$BUILD_TYPE" --site "$MVN_PROJECT" ${VALIDATOR_BASELINE:+--baseline "$VALIDATOR_BASELINE"} \
 && BUILD_TYPE="$BUILD_TYPE" MVN_PROJECT="$MVN_PROJECT" VALIDATOR_BASELINE="$VALIDATOR_BASELINE" cargo build --release --locked -p runtime \
 && mkdir -p /out/data \
 && cp target/release/runtime /out/runtime

# A minimal image: the binary and the C runtime, as a non-root user.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/runtime /app/runtime
USER 65532:65532
ENV EMR_DATA_DIR=/data \
    EMR_LISTEN=0.0.0.0:8080 \
    EMR_APP_PATH=/openmrs
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/app/runtime", "healthcheck"]
ENTRYPOINT ["/app/runtime"]
CMD ["serve"]
