package dev.frdiag.agent.controlplane;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

/**
 * A Flight Recorder a worker server can be asked for, by the handler that dumps it as JSON. PyTorch keeps one
 * recorder per kind of work: the NCCL process groups' (CUDA builds only) and the generic one that gloo and other
 * backends record into; a job with NCCL and gloo groups has both, and each holds only its own groups' entries.
 */
public enum Recorder {
  /** ProcessGroupNCCL's recorder; takes {@code includecollectives} and {@code onlyactive}, each true or false. */
  NCCL("dump_nccl_trace_json", true, "the NCCL recorder"),
  /** The generic recorder (gloo and others): always the whole ring, the request's parameters are ignored. */
  GENERIC("fr_trace_json", false, "the generic recorder: gloo and others");

  private final String handler;
  private final boolean filters;
  private final String description;

  Recorder(String handler, boolean filters, String description) {
    this.handler = handler;
    this.filters = filters;
    this.description = description;
  }

  /** Which recorder this is, for logs. */
  public String description() {
    return description;
  }

  /** Every recorder's handler, in this enum's order. */
  public static List<String> handlers() {
    return Arrays.stream(values()).map(Recorder::handler).toList();
  }

  /** The handler that answers with this recorder's dump as JSON. */
  public String handler() {
    return handler;
  }

  /** The request target for this recorder's dump, with only its active entries when the handler can leave out. */
  String target(boolean onlyActive) {
    // PyTorch's NCCL handlers answer 400 to a parameter they do not know; the generic one takes none.
    return "/handler/" + handler + (filters ? "?includecollectives=true&onlyactive=" + onlyActive : "");
  }

  /** The recorders a worker server with these handlers serves, in this enum's order; empty for none. */
  public static List<Recorder> among(Collection<String> handlers) {
    List<Recorder> out = new ArrayList<>();
    for (Recorder r : values()) {
      if (handlers.contains(r.handler)) {
        out.add(r);
      }
    }
    return out;
  }
}
