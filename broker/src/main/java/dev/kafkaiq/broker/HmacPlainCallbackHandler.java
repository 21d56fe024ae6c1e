package dev.kafkaiq.broker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.plain.PlainAuthenticateCallback;

/**
 * SASL/PLAIN on the teaching broker, without a credential store: a user's password is
 * HMAC-SHA256(server secret, user name), base64url. The lab server, which holds the same secret
 * (a 0600 file), derives an attempt's password when the attempt starts; the broker recomputes it
 * on every login. Nothing is written to the cluster per attempt, so there is no credential to
 * create, replicate or forget to delete (SCRAM would need an AlterUserScramCredentials round trip
 * per attempt, and a second one to remove it).
 *
 * Attempt users carry their expiry: "attempt-NAMESPACE.EXPIRY" (unix seconds). A login after that
 * moment is refused, so a password printed by a program is worthless once its attempt is over
 * (its ACLs are deleted then too). Only three shapes of user exist: the broker itself, the grader
 * (both super users) and attempts; any other name is refused.
 *
 * Configured through the listener's JAAS entry: secretFile="...".
 *
 * Each attempt user may log in at most kafkaiq.limit.authentications.per.second (with a burst);
 * past that, every login of that user is refused for kafkaiq.limit.authentication.lockout.ms.
 * Only a login with the right password counts, so a program cannot
 * lock out another attempt by failing logins in its name. The broker's
 * connection.failed.authentication.delay.ms then holds each refused connection before closing it,
 * which bounds how fast one program can come back (server-properties.ts).
 */
public final class HmacPlainCallbackHandler implements AuthenticateCallbackHandler {
    private static final Pattern ATTEMPT_USER = Pattern.compile("attempt-[a-z0-9-]{1,80}\\.([0-9]{1,12})");
    private static final Pattern SERVICE_USER = Pattern.compile("kafkaiq-(broker|grader)");
    private byte[] secret;
    private PrincipalRateLimit authentications;

    @Override
    public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
        String file = null;
        for (AppConfigurationEntry entry : entries) {
            Object value = entry.getOptions().get("secretFile");
            if (value != null) file = value.toString();
        }
        if (file == null) throw new IllegalArgumentException("HmacPlainCallbackHandler needs secretFile=\"...\" in the listener's JAAS entry");
        try {
            secret = Files.readString(Path.of(file), StandardCharsets.UTF_8).trim().getBytes(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the SASL secret " + file + ": " + e.getMessage(), e);
        }
        if (secret.length < 32) throw new IllegalArgumentException("the SASL secret in " + file + " is shorter than 32 bytes");
        authentications = PrincipalRateLimit.shared("authentications",
            PrincipalRateLimit.number(configs, "kafkaiq.limit.authentications.per.second"),
            PrincipalRateLimit.number(configs, "kafkaiq.limit.authentications.burst"),
            (long) PrincipalRateLimit.number(configs, "kafkaiq.limit.authentication.lockout.ms"));
    }

    @Override
    public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
        String user = null;
        for (Callback callback : callbacks) {
            if (callback instanceof NameCallback name) {
                user = name.getDefaultName();
            } else if (callback instanceof PlainAuthenticateCallback plain) {
                // The rate is checked last: only a proven login spends a token of its user.
                plain.authenticated(user != null && allowed(user) && matches(user, plain.password()) && authentications.tryAcquire(user));
            } else {
                throw new UnsupportedCallbackException(callback);
            }
        }
    }

    private static boolean allowed(String user) {
        if (SERVICE_USER.matcher(user).matches()) return true;
        var attempt = ATTEMPT_USER.matcher(user);
        return attempt.matches() && Long.parseLong(attempt.group(1)) > System.currentTimeMillis() / 1000;
    }

    private boolean matches(String user, char[] password) {
        byte[] expected = password(secret, user).getBytes(StandardCharsets.UTF_8);
        byte[] given = new String(password).getBytes(StandardCharsets.UTF_8);
        // Constant time: the comparison must not tell how many leading bytes were right.
        return MessageDigest.isEqual(expected, given);
    }

    static String password(byte[] secret, String user) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            return Base64.getUrlEncoder().withoutPadding().encodeToString(mac.doFinal(user.getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
        }
    }

    @Override
    public void close() {}
}
