package dev.kafkaiq.broker;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Time;

/**
 * A Kafka node (KRaft, kafka.Kafka's server) that its Node parent can restart without a new JVM.
 *
 * Standard input is a pipe from the lab server. A line "restart" stops the server cleanly (as
 * SIGTERM's shutdown hook would: controlled shutdown, logs flushed, every connection closed) and
 * starts a new one on the same configuration and data, then prints {@link #RESTARTED} on stdout
 * (the node's log). Clients see exactly what a restarted process shows them: connections refused,
 * then a broker that loads its partitions, its groups and its transactions from disk again. What
 * stays is the JVM: its loaded and compiled classes. A new JVM costs seconds of CPU to start and
 * more to warm up, and the grader's full plans restart the broker in every grade.
 *
 * EOF on standard input means the parent is gone. The kernel closes the pipe when the lab server
 * dies for any reason (even SIGKILL), so the JVM exits then, running the shutdown hook: no orphan
 * JVM, without Linux-only tricks such as PR_SET_PDEATHSIG.
 *
 * usage: RestartableBroker <server.properties>
 */
public final class RestartableBroker {
    /** The line printed once a restart's new server has started. */
    static final String RESTARTED = "[kafkaiq] broker restarted in this JVM";
    /** The line printed when a restart failed: the parent starts a new JVM instead. */
    static final String RESTART_FAILED = "[kafkaiq] restart in this JVM failed";

    /** A clean shutdown that takes longer than this halts the JVM. */
    private static final long HALT_AFTER_MS = 20_000;

    private static volatile KafkaRaftServer server;

    private RestartableBroker() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: RestartableBroker <server.properties>");
            System.exit(2);
        }
        Properties props = kafka.Kafka.getPropsFromArgs(args);
        Runtime.getRuntime().addShutdownHook(new Thread(RestartableBroker::stopCurrent, "kafka-shutdown-hook"));
        try {
            server = start(props);
        } catch (Throwable err) {
            // As kafka.Kafka does: a server that cannot start ends the JVM (the parent reads the log).
            err.printStackTrace();
            System.exit(1);
        }
        Thread commands = new Thread(() -> readCommands(props), "restart-commands");
        commands.setDaemon(true);
        commands.start();
        // The main thread stays until the JVM exits (EOF, a signal): the server may be replaced
        // under it, so it waits on the JVM, not on one server.
        Thread.currentThread().join();
    }

    private static KafkaRaftServer start(Properties props) {
        KafkaRaftServer next = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
        next.startup();
        return next;
    }

    private static void stopCurrent() {
        KafkaRaftServer current = server;
        if (current == null) return;
        current.shutdown();
        current.awaitShutdown();
    }

    private static void readCommands(Properties props) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                if (!line.trim().equals("restart")) continue; // the parent sends nothing else
                try {
                    stopCurrent();
                    server = null;
                    server = start(props);
                    System.out.println(RESTARTED);
                } catch (Throwable err) {
                    // The parent reads this line, kills the JVM and starts a new one.
                    System.out.println(RESTART_FAILED + ": " + err);
                }
                System.out.flush();
            }
        } catch (Exception ignored) {
            // A broken pipe means the same as EOF: the parent is gone.
        }
        System.err.println("[kafkaiq] parent process gone: shutting the broker down");
        // A broker that failed half-way through start-up can hang in its shutdown hook; never
        // leave an orphan JVM behind: halt if the clean shutdown takes too long.
        Thread halter = new Thread(() -> {
            try {
                Thread.sleep(HALT_AFTER_MS);
            } catch (InterruptedException ignored) {
                // exiting anyway
            }
            System.err.println("[kafkaiq] clean shutdown took too long: halting");
            Runtime.getRuntime().halt(1);
        }, "parent-watch-halter");
        halter.setDaemon(true);
        halter.start();
        System.exit(0);
    }
}
