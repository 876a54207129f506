package dev.frdiag.agent.controlplane;

import dev.frdiag.agent.controlplane.ControlPlaneException.Reason;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Asks one rank's PyTorch worker server for its Flight Recorder. PyTorch 2.4 and later start that server when the
 * training script runs under {@code torch.distributed.elastic.control_plane.worker_main()} with
 * {@code TORCH_WORKER_SERVER_SOCKET} set: HTTP/1.1 on a Unix domain socket, handlers run on
 * {@code POST /handler/<name>}. The NCCL handlers take only the query parameters they know, each exactly
 * {@code true} or {@code false}; anything else is answered 400.
 *
 * <p>Immutable and thread-safe.
 */
public final class WorkerServer {
  /** Flight Recorder as JSON; parameters {@code includecollectives}, {@code onlyactive}. No stack traces. */
  public static final String DUMP_JSON = "dump_nccl_trace_json";
  /**
   * Flight Recorder as a pickle; parameters {@code includecollectives}, {@code includestacktraces},
   * {@code onlyactive}.
   */
  public static final String DUMP_PICKLE = "dump_nccl_trace_pickle";

  private final UnixHttpClient client;

  public WorkerServer(UnixHttpClient client) {
    this.client = Objects.requireNonNull(client, "client");
  }

  /**
   * The rank's Flight Recorder as JSON, with its collectives: the cheap read, as no stack is symbolized.
   *
   * @param onlyActive leave out completed entries; pg_status still counts them
   * @throws ControlPlaneException when the rank did not answer with its dump
   */
  public byte[] dumpJson(Path socket, boolean onlyActive) throws ControlPlaneException {
    return call(socket, DUMP_JSON, "includecollectives=true&onlyactive=" + onlyActive);
  }

  /**
   * The rank's Flight Recorder as a pickle, the format of its dump files.
   *
   * @throws ControlPlaneException when the rank did not answer with its dump
   */
  public byte[] dumpPickle(Path socket, boolean onlyActive, boolean stackTraces) throws ControlPlaneException {
    return call(socket, DUMP_PICKLE, "includecollectives=true&includestacktraces=" + stackTraces + "&onlyactive="
        + onlyActive);
  }

  private byte[] call(Path socket, String handler, String query) throws ControlPlaneException {
    HttpAnswer answer = client.post(socket, "/handler/" + handler + "?" + query);
    if (answer.status() != 200) {
      String hint = answer.status() == 404 ? " (a PyTorch without NCCL, or older than 2.4?)" : "";
      throw new ControlPlaneException(socket, Reason.HTTP_STATUS, "the worker server at " + socket + " answered "
          + answer.status() + " to " + handler + hint + ": " + answer.text(200));
    }
    return answer.body();
  }
}
