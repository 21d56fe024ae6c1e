"""
An exactly-once copier for the copy lab on librdkafka (Debian's python3-confluent-kafka), written
for this course as a client nobody here wrapped: it proves the grader judges any language by what
crosses the wire. Each batch it reads is one transaction: the copies and the input offsets after
the batch commit together, or neither does.

Configured as every lab program is, by environment: KAFKA_BROKERS, INPUT_TOPIC, OUTPUT_TOPIC,
GROUP_ID, TRANSACTIONAL_ID, and the attempt's login (KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*).
"""
import os
import signal
import sys

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer

env = os.environ
client = {"bootstrap.servers": env["KAFKA_BROKERS"], "security.protocol": env.get("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT")}
if env.get("KAFKA_SASL_MECHANISM"):
    client.update({"sasl.mechanisms": env["KAFKA_SASL_MECHANISM"], "sasl.username": env["KAFKA_SASL_USERNAME"], "sasl.password": env["KAFKA_SASL_PASSWORD"]})

# read_committed: records of aborted input transactions are never seen. No auto-commit: the input
# offsets are committed only inside the transaction that carries their copies.
consumer = Consumer({**client, "group.id": env["GROUP_ID"], "isolation.level": "read_committed", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 3000, "heartbeat.interval.ms": 300})
# The same transactional.id on every restart: the new producer fences the old one and aborts what it left open.
producer = Producer({**client, "transactional.id": env["TRANSACTIONAL_ID"], "transaction.timeout.ms": 20000})

stopping = False


def stop(_signum, _frame):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)


def rewind():
    """After an abort, read again from the committed offsets: the aborted batch is copied anew."""
    assigned = consumer.assignment()
    for tp in consumer.committed(assigned, timeout=10):
        if tp.offset < 0:
            tp.offset = OFFSET_BEGINNING
        consumer.seek(tp)


def copy(batch):
    producer.begin_transaction()
    for record in batch:
        producer.produce(env["OUTPUT_TOPIC"], key=record.key(), value=record.value())
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata())
    for _ in range(5):
        try:
            producer.commit_transaction()
            return
        except KafkaException as e:
            if not e.args[0].retriable():
                raise
    raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "commit_transaction kept failing"))


producer.init_transactions()
consumer.subscribe([env["INPUT_TOPIC"]])
try:
    while not stopping:
        batch = consumer.consume(num_messages=500, timeout=0.1)
        for record in batch:
            if record.error():
                raise KafkaException(record.error())
        if not batch:
            continue
        try:
            copy(batch)
        except KafkaException as e:
            # An abortable error (a failed send, a rebalance that took the partition): abort and
            # copy the batch again. Anything else (fenced by a newer instance) ends this process.
            if not e.args[0].txn_requires_abort():
                raise
            print(f"aborting the batch: {e.args[0].str()}", file=sys.stderr, flush=True)
            producer.abort_transaction()
            rewind()
finally:
    consumer.close()
