package dev.frdiag.daemon.access;

import dev.frdiag.proto.BearerToken;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.function.Consumer;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds out who calls, from a bearer token or the client certificate, and refuses callers the access file does not
 * know (UNAUTHENTICATED). What each caller may do is checked by the services through {@link Access}.
 */
public final class AccessInterceptor implements ServerInterceptor {
  private static final Logger log = LoggerFactory.getLogger(AccessInterceptor.class);

  private final AccessRules rules;
  private final Consumer<String> denied;

  /**
   * @param denied told the reason of every refusal (for metrics)
   */
  public AccessInterceptor(AccessRules rules, Consumer<String> denied) {
    this.rules = rules;
    this.denied = denied;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
      ServerCallHandler<Q, R> next) {
    Principal who = null;
    String header = headers.get(BearerToken.HEADER);
    if (header != null) {
      String token = BearerToken.parseHeader(header);
      who = token == null ? null : rules.byToken(token);
      if (who == null) {
        return refuse(call, "unknown_token", "the token is not in the daemon's access file");
      }
    } else {
      String subject = certificateSubject(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION));
      who = subject == null ? null : rules.byCertificate(subject);
      if (who == null) {
        return refuse(call, "no_credentials", subject == null
            ? "this daemon needs a token (authorization: Bearer …) or a client certificate it knows"
            : "the client certificate " + subject + " is not in the daemon's access file");
      }
    }
    return Contexts.interceptCall(Context.current().withValue(Access.PRINCIPAL, who), call, headers, next);
  }

  private <Q, R> ServerCall.Listener<Q> refuse(ServerCall<Q, R> call, String reason, String message) {
    denied.accept(reason);
    log.warn("refused {} from {}: {}", call.getMethodDescriptor().getFullMethodName(),
        call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR), message);
    call.close(Status.UNAUTHENTICATED.withDescription(message), new Metadata());
    return new ServerCall.Listener<>() { };
  }

  private static String certificateSubject(SSLSession session) {
    if (session == null) {
      return null;
    }
    try {
      Certificate[] chain = session.getPeerCertificates();
      return chain.length > 0 && chain[0] instanceof X509Certificate x
          ? x.getSubjectX500Principal().getName() : null;
    } catch (SSLPeerUnverifiedException e) {
      return null;
    }
  }
}
