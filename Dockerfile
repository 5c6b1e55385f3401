# The Jukebox worker. Built by docker-compose.yml; it connects to JUKEBOX_TEMPORAL_ADDRESS.
FROM node:20-slim
WORKDIR /app
# Dependencies first, so code changes do not re-run npm ci.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
USER node
CMD ["npx", "tsx", "worker.ts"]
