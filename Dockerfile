# The Latchkey server as an image: compiled, production dependencies only, run as a non-root user.
# Configuration is the environment (README, Configuration); with DATABASE_URL set the server also
# needs LATCHKEY_MASTER_KEY and LATCHKEY_SIGNING_KEYS. compose.yaml runs it with PostgreSQL and an
# S3-compatible store; docs/operations.md covers TLS, backups, key rotation and upgrades.

# Node 22 LTS, the line the protected executables embed (native/runtimes).
FROM node:22-bookworm-slim AS build
WORKDIR /app
# Manifests first: the dependency layer is rebuilt only when they change.
COPY package.json package-lock.json ./
COPY runtime-sdk/package.json runtime-sdk/
COPY native/package.json native/
COPY server/package.json server/
COPY cli/package.json cli/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:22-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    LATCHKEY_DATA_DIR=/var/lib/latchkey
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/runtime-sdk ./runtime-sdk
COPY --from=build /app/native ./native
COPY --from=build /app/server/package.json ./server/
COPY --from=build /app/server/dist ./server/dist
# The data directory (downloaded Node runtimes for protected builds, and stored artifacts when
# LATCHKEY_STORAGE is filesystem) belongs to the unprivileged user that runs the server.
RUN mkdir -p /var/lib/latchkey && chown node:node /var/lib/latchkey && chmod 700 /var/lib/latchkey
USER node
VOLUME /var/lib/latchkey
EXPOSE 8080
# Ready: the process answers and reaches its database.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node itself as PID 1's child-free process: SIGTERM reaches the server, which drains and exits.
CMD ["node", "server/dist/main.js"]
