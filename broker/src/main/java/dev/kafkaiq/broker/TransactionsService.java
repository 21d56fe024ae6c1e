package dev.kafkaiq.broker;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.common.TopicPartition;

/**
 * One long-lived JVM that answers the workbench's `inspect txns` (ListTransactions, then
 * DescribeTransactions): one request per stdin line (a transactional-id prefix), one JSON line
 * per answer on stdout. Starting a JVM per request cost about a second and a half of CPU each.
 * Exits when stdin closes (its Node parent is gone).
 *
 * usage: TransactionsService <bootstrap servers> <client properties file>
 */
public final class TransactionsService {
    private TransactionsService() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(args[1])) {
            props.load(in);
        }
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "kafkaiq-transactions");
        try (Admin admin = Admin.create(props);
             BufferedReader reader = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String prefix; (prefix = reader.readLine()) != null; ) {
                String answer;
                try {
                    answer = list(admin, prefix.trim());
                } catch (Exception e) {
                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                    answer = "{\"ok\":false,\"error\":" + json(String.valueOf(cause.getMessage())) + "}";
                }
                System.out.println(answer);
                System.out.flush();
            }
        }
    }

    private static String list(Admin admin, String prefix) throws Exception {
        List<String> ids = new ArrayList<>();
        Map<String, String> states = new java.util.HashMap<>();
        Map<String, Long> producers = new java.util.HashMap<>();
        for (TransactionListing listing : admin.listTransactions().all().get(15, TimeUnit.SECONDS)) {
            if (!listing.transactionalId().startsWith(prefix)) continue;
            ids.add(listing.transactionalId());
            states.put(listing.transactionalId(), listing.state().toString());
            producers.put(listing.transactionalId(), listing.producerId());
        }
        Map<String, TransactionDescription> described = ids.isEmpty()
            ? Map.of()
            : admin.describeTransactions(ids).all().get(15, TimeUnit.SECONDS);
        long now = System.currentTimeMillis();
        StringBuilder out = new StringBuilder("{\"ok\":true,\"transactions\":[");
        for (int i = 0; i < ids.size(); i++) {
            String id = ids.get(i);
            TransactionDescription d = described.get(id);
            if (i > 0) out.append(',');
            out.append("{\"transactionalId\":").append(json(id))
               .append(",\"state\":").append(json(d != null ? d.state().toString() : states.get(id)))
               .append(",\"producerId\":").append(d != null ? d.producerId() : producers.get(id));
            long start = d != null && d.transactionStartTimeMs().isPresent() ? d.transactionStartTimeMs().getAsLong() : -1;
            long timeout = d != null ? d.transactionTimeoutMs() : -1;
            out.append(",\"startMs\":").append(start).append(",\"nowMs\":").append(now).append(",\"timeoutMs\":").append(timeout).append(",\"partitions\":[");
            if (d != null) {
                int j = 0;
                for (TopicPartition tp : d.topicPartitions()) {
                    if (j++ > 0) out.append(',');
                    out.append(json(tp.topic() + "-" + tp.partition()));
                }
            }
            out.append("]}");
        }
        return out.append("]}").toString();
    }

    private static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
