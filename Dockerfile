# The course image used by docker-compose.yml: Node 20 for the site and lab server, a Java 17
# runtime for Kafka's admin tools (kafka-transactions, the reference copier).
FROM node:20-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# patch-package applies patches/ (the kafkajs read_committed fix) in npm ci's postinstall.
COPY patches ./patches
RUN npm ci
COPY . .
RUN npx astro build
RUN node --import tsx --input-type=module -e "const { ensureBrokerJars } = await import('./lab-server/broker/jars.ts'); await ensureBrokerJars(console.log);"
EXPOSE 4321
CMD ["npm", "start", "--", "--no-build"]
