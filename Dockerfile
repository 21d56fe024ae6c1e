# The course image used by docker-compose.yml. The base image's Node only bootstraps npm: npm ci
# installs the pinned runtime (package.json's `node` package) that the site, the lab server and
# every learner program run on. A Java 17 JDK: the pinned pom builds KafkaIQ's own broker classes
# (the SASL callback handler, the quota callback), and the broker, the admin tools and the reference
# copier run on it.
FROM node:22-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jdk-headless bubblewrap && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# patch-package applies patches/ (the kafkajs read_committed fix) in npm ci's postinstall.
COPY patches ./patches
COPY bin ./bin
RUN npm ci
COPY . .
RUN ASTRO_TELEMETRY_DISABLED=1 npx astro build
RUN npx node --import tsx --input-type=module -e "const { ensureBrokerJars } = await import('./lab-server/broker/jars.ts'); await ensureBrokerJars(console.log);"
EXPOSE 4321
CMD ["npm", "start", "--", "--no-build"]
