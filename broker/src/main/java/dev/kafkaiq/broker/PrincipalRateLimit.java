package dev.kafkaiq.broker;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.config.ConfigException;

/**
 * A token bucket per attempt user: `burst` at once, refilled at `perSecond`. When a user empties
 * its bucket it is locked out for `lockoutMs` (every request refused without further work), then
 * starts again from a bucket refilled for the time it waited. Thread-safe (the broker calls from
 * its network and request threads at once); memory stays bounded because an idle user's bucket is
 * full again, so it is dropped and recreated on demand.
 *
 * Only "attempt-..." users are limited: the broker itself and the grader (super users) never are.
 */
final class PrincipalRateLimit {
    /** Above this many users tracked at once, full (idle) buckets are swept. */
    private static final int SWEEP_ABOVE = 4_096;

    private final double perSecond;
    private final double burst;
    private final long lockoutNanos;
    private final Map<String, Bucket> buckets = new ConcurrentHashMap<>();
    private final AtomicLong refused = new AtomicLong();

    private static final Map<String, PrincipalRateLimit> SHARED = new ConcurrentHashMap<>();

    /**
     * One limit per JVM for a name and its values. The broker creates a SASL callback handler per
     * network thread (and per listener), so a limit held by each handler would be multiplied by
     * their number.
     */
    static PrincipalRateLimit shared(String name, double perSecond, double burst, long lockoutMs) {
        return SHARED.computeIfAbsent(name + "/" + perSecond + "/" + burst + "/" + lockoutMs, k -> new PrincipalRateLimit(perSecond, burst, lockoutMs));
    }

    PrincipalRateLimit(double perSecond, double burst, long lockoutMs) {
        if (perSecond <= 0 || burst < 1 || lockoutMs < 0) throw new ConfigException("a KafkaIQ rate limit needs perSecond > 0, burst >= 1 and lockoutMs >= 0");
        this.perSecond = perSecond;
        this.burst = burst;
        this.lockoutNanos = lockoutMs * 1_000_000L;
    }

    static boolean limited(String user) {
        return user != null && user.startsWith("attempt-");
    }

    /** Takes one token for the user; false when it has none left (or is locked out). */
    boolean tryAcquire(String user) {
        if (!limited(user)) return true;
        if (buckets.size() > SWEEP_ABOVE) sweep();
        boolean ok = buckets.computeIfAbsent(user, u -> new Bucket(burst)).take(System.nanoTime());
        if (!ok) refused.incrementAndGet();
        return ok;
    }

    /** True when the user would be refused now (no token taken). */
    boolean exhausted(String user) {
        if (!limited(user)) return false;
        Bucket bucket = buckets.get(user);
        return bucket != null && bucket.exhausted(System.nanoTime());
    }

    long refusedTotal() {
        return refused.get();
    }

    private void sweep() {
        long now = System.nanoTime();
        buckets.entrySet().removeIf(e -> e.getValue().full(now));
    }

    private final class Bucket {
        private double tokens;
        private long updated;
        private long lockedUntil;

        Bucket(double tokens) {
            this.tokens = tokens;
            this.updated = System.nanoTime();
        }

        private void refill(long now) {
            tokens = Math.min(burst, tokens + (now - updated) / 1e9 * perSecond);
            updated = now;
        }

        synchronized boolean take(long now) {
            if (now - lockedUntil < 0) return false;
            refill(now);
            if (tokens >= 1) {
                tokens -= 1;
                return true;
            }
            lockedUntil = now + lockoutNanos;
            return false;
        }

        synchronized boolean exhausted(long now) {
            if (now - lockedUntil < 0) return true;
            refill(now);
            return tokens < 1;
        }

        synchronized boolean full(long now) {
            if (now - lockedUntil < 0) return false;
            refill(now);
            return tokens >= burst;
        }
    }

    /** A required KafkaIQ broker property (the defaults live in lab-server/broker/server-properties.ts). */
    static double number(Map<String, ?> configs, String key) {
        Object value = configs.get(key);
        if (value == null) throw new ConfigException(key + " is not set: KafkaIQ's broker plugins need it (lab-server/broker/server-properties.ts writes it)");
        try {
            return Double.parseDouble(value.toString().trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(key, value, "not a number");
        }
    }
}
