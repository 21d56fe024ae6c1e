package dev.kafkaiq.broker;

import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.Arrays;

/**
 * Runs a main class (kafka.Kafka, the storage tool, ...) and exits when standard input closes.
 *
 * The Node process that starts the broker keeps a pipe to our stdin. When that process dies for
 * any reason (even SIGKILL), the kernel closes the pipe, we read EOF and call System.exit, which
 * runs Kafka's shutdown hook. That is how we promise "no orphan JVM, ever" without relying on
 * Linux-only tricks such as PR_SET_PDEATHSIG.
 */
public final class ParentWatchLauncher {
    private static final long HALT_AFTER_MS = 20_000;

    private ParentWatchLauncher() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: ParentWatchLauncher <main-class> [args...]");
            System.exit(2);
        }
        Thread watcher = new Thread(ParentWatchLauncher::exitWhenStdinCloses, "parent-watch");
        watcher.setDaemon(true);
        watcher.start();
        Method main = Class.forName(args[0]).getMethod("main", String[].class);
        main.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
    }

    private static void exitWhenStdinCloses() {
        try {
            InputStream in = System.in;
            byte[] buf = new byte[64];
            while (in.read(buf) >= 0) {
                // The parent never writes; anything it sends is ignored.
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
