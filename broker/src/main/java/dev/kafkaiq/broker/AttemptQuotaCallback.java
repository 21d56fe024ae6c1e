package dev.kafkaiq.broker;

import java.util.Map;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaEntity;
import org.apache.kafka.server.quota.ClientQuotaType;

/**
 * Quotas per attempt principal, with no per-attempt configuration: every "attempt-..." user gets
 * its own bucket (the metric tags name the user) with the same produce and fetch byte rates and
 * request-time percentage; the broker and the grader are never throttled. The limits come from
 * the broker's properties (kafkaiq.quota.*), so an operator can tune them in one place.
 */
public final class AttemptQuotaCallback implements ClientQuotaCallback {
    private double produceBytesPerSecond = 4 * 1024 * 1024;
    private double fetchBytesPerSecond = 8 * 1024 * 1024;
    private double requestPercentage = 100;

    @Override
    public void configure(Map<String, ?> configs) {
        produceBytesPerSecond = number(configs, "kafkaiq.quota.produce.bytes.per.second", produceBytesPerSecond);
        fetchBytesPerSecond = number(configs, "kafkaiq.quota.fetch.bytes.per.second", fetchBytesPerSecond);
        requestPercentage = number(configs, "kafkaiq.quota.request.percentage", requestPercentage);
    }

    private static double number(Map<String, ?> configs, String key, double fallback) {
        Object value = configs.get(key);
        return value == null ? fallback : Double.parseDouble(value.toString());
    }

    @Override
    public Map<String, String> quotaMetricTags(ClientQuotaType type, KafkaPrincipal principal, String clientId) {
        String user = principal.getName();
        // Unthrottled users all share one tag set whose limit is null (no quota).
        return Map.of("user", user.startsWith("attempt-") ? user : "", "client-id", "");
    }

    @Override
    public Double quotaLimit(ClientQuotaType type, Map<String, String> tags) {
        if (tags.getOrDefault("user", "").isEmpty()) return null;
        return switch (type) {
            case PRODUCE -> produceBytesPerSecond;
            case FETCH -> fetchBytesPerSecond;
            case REQUEST -> requestPercentage;
            default -> null;
        };
    }

    @Override
    public void updateQuota(ClientQuotaType type, ClientQuotaEntity entity, double newValue) {
        // Quotas are fixed by this class; dynamic quota configs (kafka-configs) are ignored.
    }

    @Override
    public void removeQuota(ClientQuotaType type, ClientQuotaEntity entity) {
        // As above: nothing dynamic to remove.
    }

    @Override
    public boolean quotaResetRequired(ClientQuotaType type) {
        return false;
    }

    @Override
    public boolean updateClusterMetadata(Cluster cluster) {
        return false;
    }

    @Override
    public void close() {}
}
