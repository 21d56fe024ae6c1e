package dev.kafkaiq.broker;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * A Java agent that adds a client properties file (security.protocol, sasl.*) to every Kafka
 * client a JVM creates: -javaagent:broker/lib/kafkaiq-launcher.jar=FILE. With =broker instead, it
 * applies the broker's Kafka patch (BrokerPatches).
 *
 * Why: Kafka's own TransactionalMessageCopier (the copy lab's command fixture) has no option for
 * a client config, and the teaching broker only speaks SASL. The agent changes nothing else: it
 * merges FILE into the originals of every config that has bootstrap.servers (producer, consumer,
 * admin), where the program did not set the key itself. The bytecode edit is one call at the
 * start of AbstractConfig's main constructor, made with the ASM copy inside the JDK.
 */
public final class ClientConfigAgent {
    private static volatile Map<String, String> extra = Map.of();

    private ClientConfigAgent() {}

    public static void premain(String file, Instrumentation inst) throws IOException {
        // The jar has one Premain-Class; the broker JVM asks for its Kafka patch instead.
        if ("broker".equals(file)) {
            BrokerPatches.install(inst);
            return;
        }
        if (file == null || file.isEmpty()) throw new IllegalArgumentException("usage: -javaagent:kafkaiq-launcher.jar=<client.properties>");
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(file)) {
            props.load(in);
        }
        Map<String, String> map = new HashMap<>();
        for (String key : props.stringPropertyNames()) map.put(key, props.getProperty(key));
        extra = Map.copyOf(map);
        Module base = Object.class.getModule();
        inst.redefineModule(base, Set.of(), Map.of("jdk.internal.org.objectweb.asm", Set.of(ClientConfigAgent.class.getModule())), Map.of(), Set.of(), Map.of());
        inst.addTransformer(new AbstractConfigPatch());
    }

    /** Called from AbstractConfig's constructor (see AbstractConfigPatch). */
    public static Map<?, ?> merge(Map<?, ?> originals) {
        if (originals == null || !originals.containsKey("bootstrap.servers")) return originals;
        Map<Object, Object> merged = new HashMap<>(originals);
        for (Map.Entry<String, String> e : extra.entrySet()) merged.putIfAbsent(e.getKey(), e.getValue());
        return merged;
    }

    private static final class AbstractConfigPatch implements ClassFileTransformer {
        private static final String TARGET = "org/apache/kafka/common/config/AbstractConfig";
        private static final String CONSTRUCTOR = "(Lorg/apache/kafka/common/config/ConfigDef;Ljava/util/Map;Ljava/util/Map;Z)V";

        @Override
        public byte[] transform(ClassLoader loader, String name, Class<?> cls, ProtectionDomain domain, byte[] bytes) {
            if (!TARGET.equals(name)) return null;
            return AsmEdit.prependMerge(bytes, CONSTRUCTOR);
        }
    }
}
