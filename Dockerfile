# The longrun worker, production-shaped: compiled JavaScript on Node 24, dev dependencies omitted.
# Used by docker-compose.yml; it connects to the servers named by TEMPORAL_ADDRESS and AWS_ENDPOINT_URL_S3.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY activities activities
COPY bin bin
COPY client client
COPY codec codec
COPY commands commands
COPY config config
COPY contract contract
COPY engine engine
COPY llm llm
COPY stack stack
COPY storage storage
COPY worker worker
COPY workflows workflows
RUN npm run build

FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY demo demo
USER node
# Worker only: no embedded servers, no demo conversation.
CMD ["node", "dist/worker/main.js", "--no-demo"]
