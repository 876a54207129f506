package dev.frdiag.daemon.access;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;

/** What the caller of the current call may do; the services ask here before they act. */
public final class Access {
  static final Context.Key<Principal> PRINCIPAL = Context.key("frdiag-principal");
  static final Context.Key<SocketAddress> PEER = Context.key("frdiag-peer");

  private Access() {}

  /** The caller of the call in progress; everyone when no access rules are configured. */
  public static Principal caller() {
    Principal p = PRINCIPAL.get();
    return p == null ? Principal.OPEN : p;
  }

  /**
   * Who the caller of the call in progress writes as, to bind a job to its writers: with an access file its
   * principal's name (several certificates or tokens under one name are one writer), without one the host it calls
   * from, the one identity of a process the daemon can check.
   */
  public static String writer() {
    Principal p = caller();
    if (p != Principal.OPEN) {
      return "principal " + p.name();
    }
    SocketAddress peer = PEER.get();
    return "host " + (peer instanceof InetSocketAddress a && a.getAddress() != null ? a.getAddress().getHostAddress()
        : String.valueOf(peer));
  }

  /** Gives every call the address it comes from, for {@link #writer()}. */
  public static ServerInterceptor peers() {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
          ServerCallHandler<Q, R> next) {
        return Contexts.interceptCall(Context.current().withValue(PEER,
            call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR)), call, headers, next);
      }
    };
  }

  /** @throws StatusRuntimeException PERMISSION_DENIED unless the caller may stream for {@code job} */
  public static void requireWriter(String job) {
    if (!caller().mayWrite(job)) {
      throw denied("write to", job);
    }
  }

  /** @throws StatusRuntimeException PERMISSION_DENIED unless the caller may read {@code job} */
  public static void requireReader(String job) {
    if (!caller().mayRead(job)) {
      throw denied("read", job);
    }
  }

  /** @throws StatusRuntimeException PERMISSION_DENIED unless the caller may trigger diagnoses of {@code job} */
  public static void requireOperator(String job) {
    if (!caller().mayOperate(job)) {
      throw denied("operate", job);
    }
  }

  private static StatusRuntimeException denied(String what, String job) {
    return Status.PERMISSION_DENIED.withDescription(caller().name() + " may not " + what + " job '" + job
        + "' (role " + (what.equals("write to") ? "writer" : what.equals("read") ? "reader" : "operator")
        + " for it needed)").asRuntimeException();
  }
}
