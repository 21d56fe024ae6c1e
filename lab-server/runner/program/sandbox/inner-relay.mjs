/**
 * Runs first inside every sandbox (node --import): listens on the namespace's loopback at each
 * address the program's env names and forwards every connection, byte for byte, to the grader's
 * relay through the Unix socket the sandbox binds for it. Plain JavaScript: it runs on the pinned
 * node without any loader. A program that tampers with it only cuts its own connections.
 */
import net from 'node:net';

const plan = JSON.parse(process.env.KAFKAIQ_RELAY ?? '[]');
delete process.env.KAFKAIQ_RELAY;

await Promise.all(
  plan.map(
    ({ listenHost, port, socket }) =>
      new Promise((resolve, reject) => {
        const server = net.createServer((inside) => {
          const outside = net.connect(socket);
          const end = () => {
            inside.destroy();
            outside.destroy();
          };
          inside.on('error', end).on('close', end);
          outside.on('error', end).on('close', end);
          inside.pipe(outside);
          outside.pipe(inside);
        });
        server.once('error', reject);
        server.listen({ host: listenHost, port, exclusive: true }, () => {
          // The listeners must not keep a finished program alive.
          server.unref();
          resolve();
        });
      }),
  ),
);
