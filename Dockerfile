# Images of docker-compose.yml. Target `worker` (default): the Jukebox worker with what the Shadow Booth needs.
# Target `objectstore`: the Versity S3 Gateway, the S3-compatible tape store, at the release the tests pin
# (servers/objectserver/install.ts), so compose and CI run one server.

FROM golang:1.26-bookworm AS objectstore-build
RUN go install github.com/versity/versitygw/cmd/versitygw@v1.8.0

FROM debian:bookworm-slim AS objectstore
COPY --from=objectstore-build /go/bin/versitygw /usr/local/bin/versitygw
VOLUME /data
EXPOSE 7070
ENTRYPOINT ["versitygw"]

FROM node:20-bookworm-slim AS worker
# bubblewrap: the booth's shell sandbox (src/booth/shell); python3, make, g++: sqlite3's native build when no
# prebuilt binary fits (the accounting agent's ledger database); ca-certificates: model APIs over TLS.
RUN apt-get update \
  && apt-get install -y --no-install-recommends bubblewrap ca-certificates python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Dependencies first, so code changes do not re-run npm ci.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# Tapes (the folder store, when JUKEBOX_TAPE_STORE names no object store) live on a volume.
RUN mkdir -p /var/lib/jukebox/tapes && chown -R node:node /var/lib/jukebox
ENV JUKEBOX_TAPE_DIR=/var/lib/jukebox/tapes
VOLUME ["/var/lib/jukebox/tapes"]
USER node
CMD ["npx", "tsx", "examples/sample/worker.ts"]
