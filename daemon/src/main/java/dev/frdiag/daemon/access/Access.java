package dev.frdiag.daemon.access;

import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/** What the caller of the current call may do; the services ask here before they act. */
public final class Access {
  static final Context.Key<Principal> PRINCIPAL = Context.key("frdiag-principal");

  private Access() {}

  /** The caller of the call in progress; everyone when no access rules are configured. */
  public static Principal caller() {
    Principal p = PRINCIPAL.get();
    return p == null ? Principal.OPEN : p;
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
