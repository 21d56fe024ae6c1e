package dev.kafkaiq.broker;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;

/**
 * Kafka's StandardAuthorizer (ACLs in the KRaft metadata log), with two bounds on attempt users
 * that no ACL can express, because the broker keeps state per transactional id and per group:
 *  - a transactional id or group id longer than kafkaiq.limit.id.max.length is refused (DENIED,
 *    so TRANSACTIONAL_ID_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED) before the coordinator
 *    ever sees it: an attempt cannot make the broker hold megabyte-long ids in its heap;
 *  - InitProducerId (transactional or idempotent) is limited per user to
 *    kafkaiq.limit.init.producer.ids.per.second with a burst: each one is a write to
 *    __transaction_state (or a producer-id allocation) that every other attempt's transactions
 *    queue behind. Past the rate the request is refused, not delayed: the authorizer runs on the
 *    broker's request threads, and waiting there would stall every other client.
 * Why here: the authorizer sees the principal, the resource name and the request type of every
 * such request, before the request does any work. The broker and the grader are super users and
 * attempt users are the only "attempt-..." principals: only they are bounded.
 */
public class AttemptAuthorizer extends StandardAuthorizer {
    private int maxIdLength = 249;
    private PrincipalRateLimit initProducerIds;

    @Override
    public void configure(Map<String, ?> configs) {
        super.configure(configs);
        maxIdLength = (int) PrincipalRateLimit.number(configs, "kafkaiq.limit.id.max.length");
        initProducerIds = new PrincipalRateLimit(
            PrincipalRateLimit.number(configs, "kafkaiq.limit.init.producer.ids.per.second"),
            PrincipalRateLimit.number(configs, "kafkaiq.limit.init.producer.ids.burst"),
            0);
    }

    @Override
    public List<AuthorizationResult> authorize(AuthorizableRequestContext context, List<Action> actions) {
        String user = context.principal() == null ? null : context.principal().getName();
        if (!PrincipalRateLimit.limited(user)) return super.authorize(context, actions);
        List<AuthorizationResult> results = new ArrayList<>(super.authorize(context, actions));
        for (int i = 0; i < actions.size(); i++) {
            if (results.get(i) != AuthorizationResult.ALLOWED) continue;
            Action action = actions.get(i);
            ResourceType type = action.resourcePattern().resourceType();
            if ((type == ResourceType.TRANSACTIONAL_ID || type == ResourceType.GROUP) && action.resourcePattern().name().length() > maxIdLength) {
                results.set(i, AuthorizationResult.DENIED);
            } else if (context.requestType() == ApiKeys.INIT_PRODUCER_ID.id
                && (type == ResourceType.TRANSACTIONAL_ID || type == ResourceType.CLUSTER)
                && !initProducerIds.tryAcquire(user)) {
                results.set(i, AuthorizationResult.DENIED);
            }
        }
        return results;
    }

    /**
     * An idempotent InitProducerId that lacks IDEMPOTENT_WRITE falls back to "may write some
     * topic" (this method, which reads the ACLs without calling authorize): refused too while the
     * user is over its InitProducerId rate.
     */
    @Override
    public AuthorizationResult authorizeByResourceType(AuthorizableRequestContext context, AclOperation op, ResourceType resourceType) {
        String user = context.principal() == null ? null : context.principal().getName();
        if (context.requestType() == ApiKeys.INIT_PRODUCER_ID.id && initProducerIds != null && initProducerIds.exhausted(user)) {
            return AuthorizationResult.DENIED;
        }
        return super.authorizeByResourceType(context, op, resourceType);
    }
}
